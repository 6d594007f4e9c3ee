/** An object from a tool (a preview, a result) as labelled fields, nested where it nests. */
import { humanLabel, scalarText } from "../readable.js";

export interface ReadableFieldsProps {
  value: unknown;
  /** The key this value sits under (a time is recognised by its name). */
  name?: string;
}

/** A description list for an object, a list for an array of objects, plain text for the rest. */
export function ReadableFields({ value, name = "" }: ReadableFieldsProps) {
  const scalar = scalarText(name, value);
  if (scalar !== null) return <span className="readable-value">{scalar}</span>;
  if (Array.isArray(value)) {
    return (
      <ul className="readable-list">
        {value.map((item, index) => (
          <li key={index}>
            <ReadableFields value={item} name={name} />
          </li>
        ))}
      </ul>
    );
  }
  const entries = Object.entries(value as Record<string, unknown>);
  return (
    <dl className="readable-fields">
      {entries.map(([key, field]) => (
        <div key={key}>
          <dt>{humanLabel(key)}</dt>
          <dd>
            <ReadableFields value={field} name={key} />
          </dd>
        </div>
      ))}
    </dl>
  );
}
