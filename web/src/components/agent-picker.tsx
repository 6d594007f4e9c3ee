/**
 * Which agent a new message runs, next to the message field: the deployed agents (the chat loop
 * by default) and, for an agent with a config, its settings (for `research`: the subtasks, one a
 * line, and how many run at once). Shown only when more than one agent is deployed.
 */
import { useId } from "react";
import type { AgentView } from "../../../src/client/index.js";
import type { ConfigField, ConfigValues } from "../agent-config.js";

export interface AgentPickerProps {
  agents: readonly AgentView[];
  /** The chosen agent's name. */
  agent: string;
  fields: readonly ConfigField[];
  values: ConfigValues;
  /** What is wrong with a field, by name. */
  errors: Readonly<Record<string, string>>;
  onAgentChange(agent: string): void;
  onValueChange(name: string, value: string): void;
}

/** The agent select and the chosen agent's settings. */
export function AgentPicker(props: AgentPickerProps) {
  const id = useId();
  const chosen = props.agents.find((agent) => agent.name === props.agent);
  return (
    <div className="agent-picker">
      <div className="agent-choice">
        <label htmlFor={`${id}-agent`}>Agent</label>
        <select id={`${id}-agent`} value={props.agent} onChange={(event) => props.onAgentChange(event.target.value)} aria-describedby={`${id}-about`}>
          {props.agents.map((agent) => (
            <option key={agent.name} value={agent.name}>
              {agent.name}
            </option>
          ))}
        </select>
        <span className="agent-about" id={`${id}-about`}>
          {chosen?.description ?? ""}
        </span>
      </div>
      {props.fields.length > 0 && (
        <fieldset className="agent-config">
          <legend className="visually-hidden">Settings of the {props.agent} agent</legend>
          {props.fields.map((field) => (
            <ConfigInput
              key={field.name}
              id={`${id}-${field.name}`}
              field={field}
              value={props.values[field.name] ?? field.initial}
              error={props.errors[field.name] ?? null}
              onChange={(value) => props.onValueChange(field.name, value)}
            />
          ))}
        </fieldset>
      )}
    </div>
  );
}

interface ConfigInputProps {
  id: string;
  field: ConfigField;
  value: string;
  error: string | null;
  onChange(value: string): void;
}

function ConfigInput({ id, field, value, error, onChange }: ConfigInputProps) {
  const describedBy = [field.help ? `${id}-help` : "", error ? `${id}-error` : ""].filter(Boolean).join(" ") || undefined;
  const common = { id, "aria-invalid": error !== null, "aria-describedby": describedBy };
  const label = field.kind === "lines" ? `${field.label} (one per line, optional)` : field.label;
  return (
    <div className={`config-field ${field.kind}`}>
      {field.kind === "boolean" ? (
        <label>
          <input type="checkbox" {...common} checked={value === "true"} onChange={(event) => onChange(event.target.checked ? "true" : "")} /> {field.label}
        </label>
      ) : (
        <label htmlFor={id}>{label}</label>
      )}
      {field.kind === "lines" && <textarea {...common} rows={2} value={value} onChange={(event) => onChange(event.target.value)} />}
      {(field.kind === "integer" || field.kind === "number") && (
        <input
          {...common}
          type="number"
          inputMode={field.kind === "integer" ? "numeric" : "decimal"}
          step={field.kind === "integer" ? 1 : "any"}
          min={field.minimum ?? undefined}
          max={field.maximum ?? undefined}
          value={value}
          onChange={(event) => onChange(event.target.value)}
        />
      )}
      {field.kind === "text" && <input {...common} type="text" value={value} onChange={(event) => onChange(event.target.value)} />}
      {field.help && field.kind !== "lines" && (
        <span className="config-help" id={`${id}-help`}>
          {field.help}
        </span>
      )}
      {field.help && field.kind === "lines" && (
        <span className="visually-hidden" id={`${id}-help`}>
          {field.help}
        </span>
      )}
      {error && (
        <span className="config-error" id={`${id}-error`}>
          {error}
        </span>
      )}
    </div>
  );
}
