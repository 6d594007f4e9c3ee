/**
 * The values the HTTP fuzz puts in paths, queries, headers and bodies, drawn by fast-check. Big
 * values stay symbolic ({@link Huge}, {@link Deep}, {@link IdRef}) until a request is written, so
 * that a failing case prints in a line, not in a megabyte, and shrinks by its size.
 */
import fc from "fast-check";

/** The kinds of ids a request can name. `resp` is OpenAI's name of a run; `agent` a deployed agent's name. */
export type IdKind = "thr" | "run" | "cp" | "msg" | "op" | "resp" | "agent";

/** Which id goes where: one of the acting tenant's, one of the other tenant's, one that names nothing, or not an id at all. */
export type IdChoice =
  | { kind: "own"; index: number }
  | { kind: "foreign"; index: number }
  | { kind: "unknown"; suffix: string }
  | { kind: "other_kind"; of: IdKind; index: number }
  | { kind: "raw"; segment: string }
  | { kind: "text"; text: string }
  | { kind: "long"; length: number; char: string };

/**
 * An id of `kind` chosen by `choice`, resolved when the request is written. `isName`: the field
 * names something new (a client-named `run_id`) rather than referring to something that exists.
 */
export class IdRef {
  constructor(
    readonly of: IdKind,
    readonly choice: IdChoice,
    readonly isName = false,
  ) {}
  [fc.toStringMethod](): string {
    return `IdRef(${this.of}, ${JSON.stringify(this.choice)}${this.isName ? ", name" : ""})`;
  }
}

/** A string of `length` copies of `char` (up to past the body limit). */
export class Huge {
  constructor(
    readonly length: number,
    readonly char: string,
  ) {}
  [fc.toStringMethod](): string {
    return `Huge(${this.length}, ${JSON.stringify(this.char)})`;
  }
}

/** Arrays (or objects) nested `depth` levels deep. */
export class Deep {
  constructor(
    readonly depth: number,
    readonly isObject: boolean,
  ) {}
  [fc.toStringMethod](): string {
    return `Deep(${this.depth}, ${this.isObject ? "objects" : "arrays"})`;
  }
}

/** Text that is hard on parsers and stores: NUL, lone and paired surrogates, RTL, BOM, combining marks, controls. */
export const EDGE_TEXTS = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "\udfff",
  "x\ud83d",
  "🌊",
  "\u202e\u2066rtl",
  "\ufeff",
  "e\u0301",
  "\u0007\u001b[31m",
  "\r\n",
  "null",
  "__proto__",
  "constructor",
  "../../etc/passwd",
  "%00",
  "' OR 1=1 --",
  "${jndi:ldap://x}",
  "\uffff",
  "\u2028\u2029",
];

/** Short text of any kind: full Unicode, edge cases, or plain. */
export const fuzzText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...EDGE_TEXTS),
  fc.string({ maxLength: 24 }),
  fc.string({ unit: "binary", maxLength: 16 }),
  fc.string({ unit: fc.constantFrom("\ud800", "\udc00", "a", "\u0000", "é", "😀"), maxLength: 8 }),
);

/** A value of any JSON type, small, or symbolic and big. */
export const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.oneof(fc.constant(null), fc.boolean(), fuzzNumber(), fuzzText) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  { weight: 1, arbitrary: hugeString() },
  { weight: 1, arbitrary: deepValue() },
);

/** Numbers a schema may not expect: negative, fractional, huge, unsafe. */
export function fuzzNumber(): fc.Arbitrary<number> {
  return fc.oneof(
    fc.integer({ min: -5, max: 200 }),
    fc.constantFrom(-1, -0, 0.5, 1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, 2 ** 31, 2 ** 63, 1e-7),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
  );
}

/** A string from empty to a little past the 1 MiB body limit. */
export function hugeString(): fc.Arbitrary<Huge> {
  return fc
    .tuple(fc.constantFrom(1_000, 65_536, 100_001, 200_001, 700_000, 1_100_000), fc.constantFrom("x", "é", "🌊", "\u0001"))
    .map(([length, char]) => new Huge(length, char));
}

/** Nesting around the 64-level limit, and far past it. */
export function deepValue(): fc.Arbitrary<Deep> {
  return fc.tuple(fc.constantFrom(63, 64, 65, 66, 200, 5_000), fc.boolean()).map(([depth, isObject]) => new Deep(depth, isObject));
}

/** A choice of id of `of`: mostly real ones (own and foreign), then unknown, then malformed. */
export function idChoice(of: IdKind, isName = false): fc.Arbitrary<IdRef> {
  const choice: fc.Arbitrary<IdChoice> = fc.oneof(
    { weight: 5, arbitrary: fc.nat(40).map((index) => ({ kind: "own" as const, index })) },
    { weight: 4, arbitrary: fc.nat(40).map((index) => ({ kind: "foreign" as const, index })) },
    { weight: 2, arbitrary: fc.stringMatching(/^[0-9a-z]{26}$/).map((suffix) => ({ kind: "unknown" as const, suffix })) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom<IdKind>("thr", "run", "cp", "msg", "op"), fc.nat(40))
        .map(([kind, index]) => ({ kind: "other_kind" as const, of: kind, index })),
    },
    {
      weight: 2,
      arbitrary: fc
        .constantFrom("%00", "%FF%FE", "%ED%A0%80", "%zz", "%", "%2F", "%2e%2e", "..", ".", "%20", "run_%00", "thr_", "+", "%E2%80%AE", "A".repeat(27))
        .map((segment) => ({ kind: "raw" as const, segment })),
    },
    { weight: 2, arbitrary: fuzzText.map((text) => ({ kind: "text" as const, text })) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom(101, 1_000, 9_000, 20_000), fc.constantFrom("a", "%00", "é"))
        .map(([length, char]) => ({ kind: "long" as const, length, char })),
    },
  );
  return choice.map((chosen) => new IdRef(of, chosen, isName));
}

/** A path segment for `text`: percent-encoded as UTF-8, lone surrogates as the bytes a careless encoder writes. */
export function encodeSegment(text: string): string {
  let encoded = "";
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (code >= 0xd800 && code <= 0xdfff) {
      encoded += [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)].map((byte) => `%${byte.toString(16).toUpperCase()}`).join("");
    } else {
      encoded += encodeURIComponent(char);
    }
  }
  return encoded;
}
