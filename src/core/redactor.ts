/**
 * The redactor (issue 19): everything that leaves the confirmed state (trace entries, log lines,
 * OpenTelemetry attributes and operation previews) passes through one function that rewrites
 * what an operator must not read. The confirmed state itself (the messages the user saw, a tool's
 * input and result the run needs) is never redacted: it is the user's data, not a copy of it.
 *
 * A redactor is any `(text) => text`; {@link createRedactor} builds one from the built-in rules
 * and extra patterns, and {@link redactValue} applies one to every string of a JSON value.
 *
 * @example
 * const redactor = createRedactor({ patterns: [/\bACME-\d{6}\b/g] });
 * redactor("mail ann@example.com about ACME-123456"); // "mail ***@example.com about [redacted]"
 */

/** Rewrites a text that leaves the confirmed state; must return the text unchanged when there is nothing to hide. */
export type Redactor = (text: string) => string;

/** The built-in rules: `email` keeps an address's domain, `card` a card number's last four digits. */
export type RedactionRule = "email" | "card";

/** The built-in rules, in the order they apply. */
export const REDACTION_RULES: readonly RedactionRule[] = ["email", "card"];

/** Options for {@link createRedactor}. */
export interface RedactorOptions {
  /** The built-in rules to apply (default all of {@link REDACTION_RULES}; `[]` for none). */
  rules?: readonly RedactionRule[];
  /** Extra patterns: every match becomes `[redacted]` (a pattern without the `g` flag gets it). */
  patterns?: readonly RegExp[];
}

/** What a match of an extra pattern becomes. */
export const REDACTED = "[redacted]";

// A local part and a dotted domain; the domain stays, so an approver still sees where mail goes.
// Bounded parts (an address's own limits) keep a long text without a match linear.
const EMAIL = /[\w.+%-]{1,64}@([A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})+)/g;

// 13–19 digits, single spaces or dashes between them, starting with an issuer's digit (2–6: no
// millisecond timestamp of this century starts so) and standing alone: not a piece of an id, a
// UUID or a longer number. Luhn decides the rest.
const CARD_CANDIDATE = /(?<![\w-])[2-6](?:[ -]?\d){12,18}(?![\w-])/g;

/** Whether `digits` passes the Luhn check every card number passes. */
export function isLuhnValid(digits: string): boolean {
  let sum = 0;
  for (let index = 0; index < digits.length; index++) {
    let digit = digits.charCodeAt(digits.length - 1 - index) - 48;
    if (index % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

function maskEmails(text: string): string {
  return text.replace(EMAIL, (_match, domain: string) => `***@${domain}`);
}

function maskCards(text: string): string {
  return text.replace(CARD_CANDIDATE, (match) => {
    const digits = match.replace(/[ -]/g, "");
    return isLuhnValid(digits) ? `[card …${digits.slice(-4)}]` : match;
  });
}

const RULES: Record<RedactionRule, Redactor> = { email: maskEmails, card: maskCards };

// Cheap tests that skip a rule's regular expression on the (usual) text that cannot match it.
const MAY_MATCH: Record<RedactionRule, (text: string) => boolean> = {
  email: (text) => text.includes("@"),
  card: (text) => /\d{4}|\d[ -]\d/.test(text),
};

/** A redactor applying the built-in `rules` and then each of `patterns`. */
export function createRedactor(options: RedactorOptions = {}): Redactor {
  const rules = [...new Set(options.rules ?? REDACTION_RULES)];
  const patterns = (options.patterns ?? []).map((pattern) => (pattern.global ? pattern : new RegExp(pattern.source, `${pattern.flags}g`)));
  if (rules.length === 0 && patterns.length === 0) return noRedaction;
  return (text) => {
    let redacted = text;
    for (const rule of rules) if (MAY_MATCH[rule](redacted)) redacted = RULES[rule](redacted);
    for (const pattern of patterns) redacted = redacted.replace(pattern, REDACTED);
    return redacted;
  };
}

/** The default: emails and card numbers masked. */
export const defaultRedactor: Redactor = createRedactor();

/** Redacts nothing (`TIDEMARK_REDACT=off`). */
export const noRedaction: Redactor = (text) => text;

// Deep enough for any trace entry or preview a tool builds; deeper parts are dropped, not copied.
const MAX_DEPTH = 32;

/**
 * `value` with every string in it (object keys too) passed through `redactor`; numbers, booleans
 * and null are kept, an `Error` becomes `{ name, message, stack }` redacted. Returns `value`
 * itself when the redactor redacts nothing.
 */
export function redactValue<T>(redactor: Redactor, value: T): T {
  if (redactor === noRedaction) return value;
  return redactAt(redactor, value, 0) as T;
}

function redactAt(redactor: Redactor, value: unknown, depth: number): unknown {
  if (typeof value === "string") return redactor(value);
  if (value === null || typeof value !== "object") return value;
  if (depth >= MAX_DEPTH) return REDACTED;
  if (value instanceof Error) {
    return { name: value.name, message: redactor(value.message), ...(value.stack !== undefined ? { stack: redactor(value.stack) } : {}) };
  }
  // A Date, say: what JSON would write of it.
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return redactAt(redactor, (value as { toJSON(): unknown }).toJSON(), depth + 1);
  if (Array.isArray(value)) return value.map((item) => redactAt(redactor, item, depth + 1));
  const redacted: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) redacted[redactor(key)] = redactAt(redactor, item, depth + 1);
  return redacted;
}
