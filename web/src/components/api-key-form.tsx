/** Asks for an API key when the server has them (TIDEMARK_API_KEYS); kept for this tab only. */
import { useState, type FormEvent } from "react";

export interface ApiKeyFormProps {
  hasKey: boolean;
  onSubmit(key: string): void;
}

/** A password field and a button; shown after the server answered 401. */
export function ApiKeyForm({ hasKey, onSubmit }: ApiKeyFormProps) {
  const [key, setKey] = useState("");
  function submit(event: FormEvent): void {
    event.preventDefault();
    if (key.trim()) onSubmit(key.trim());
  }
  return (
    <form className="panel" onSubmit={submit} aria-labelledby="api-key-title">
      <h3 id="api-key-title">{hasKey ? "The API key was refused" : "This server needs an API key"}</h3>
      <label htmlFor="api-key">API key</label>
      <input id="api-key" type="password" autoComplete="off" value={key} onChange={(event) => setKey(event.target.value)} />
      <button type="submit" className="primary" disabled={!key.trim()}>
        Use this key
      </button>
    </form>
  );
}
