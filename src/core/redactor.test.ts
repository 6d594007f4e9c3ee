import { describe, expect, it } from "vitest";
import { createRedactor, defaultRedactor, isLuhnValid, noRedaction, redactValue } from "./redactor.js";
import { redactLogger } from "./redacting-logger.js";
import { silentLogger, type Logger } from "./logger.js";
import { createId } from "./ids.js";

describe("defaultRedactor", () => {
  it("masks email addresses, keeping their domain", () => {
    expect(defaultRedactor("write to ann.lee+work@example.co.uk today")).toBe("write to ***@example.co.uk today");
    expect(defaultRedactor('{"to":"bob@example.org","cc":["c_d@mail.example.com"]}')).toBe('{"to":"***@example.org","cc":["***@mail.example.com"]}');
  });

  it("masks Luhn-valid card numbers of 13 to 19 digits, plain, spaced or dashed, keeping the last four", () => {
    expect(defaultRedactor("card 4111111111111111 ok")).toBe("card [card …1111] ok");
    expect(defaultRedactor("card 4111 1111 1111 1111.")).toBe("card [card …1111].");
    expect(defaultRedactor("card 5555-5555-5555-4444, exp 12/29")).toBe("card [card …4444], exp 12/29");
    expect(defaultRedactor("amex 378282246310005")).toBe("amex [card …0005]");
    expect(defaultRedactor("visa13 4222222222222")).toBe("visa13 [card …2222]");
    expect(defaultRedactor("19 digits 6011000990139424000".replace(/000$/, "") + " end")).toBe("19 digits [card …9424] end");
  });

  it("leaves ids, timestamps, UUIDs, phone numbers and numbers that are not card numbers alone", () => {
    const untouched = [
      createId("run"),
      createId("op"),
      "trace 1764775075123 at 2026-12-03T15:17:55.123Z",
      // A millisecond timestamp that passes Luhn: no issuer starts with 1.
      "1764775075120",
      "1764775075123456",
      "550e8400-e29b-41d4-a716-446655440000",
      "12345678-1234-1234-1234-123456789012",
      "call +1 415 555 2671 or 020 7946 0958",
      // Luhn-invalid 16 digits.
      "4111111111111112",
      // Too short, too long (a 20-digit Luhn-valid number).
      "411111111111",
      "41111111111111111115",
      "order-4111111111111111",
      "4111111111111111-b",
      "no at sign here, @handle, a@b",
    ];
    expect(isLuhnValid("1764775075120")).toBe(true);
    expect(isLuhnValid("41111111111111111115")).toBe(true);
    for (const text of untouched) expect(defaultRedactor(text)).toBe(text);
  });
});

describe("createRedactor", () => {
  it("applies only the rules asked for, then each extra pattern as [redacted]", () => {
    const redactor = createRedactor({ rules: ["card"], patterns: [/TMK-SECRET-\d+/, /acme-\d{3}/gi] });
    expect(redactor("ann@example.org 4111111111111111 TMK-SECRET-42 and ACME-123")).toBe("ann@example.org [card …1111] [redacted] and [redacted]");
    expect(redactor("twice TMK-SECRET-1 TMK-SECRET-2")).toBe("twice [redacted] [redacted]");
  });

  it("with no rule and no pattern redacts nothing", () => {
    expect(createRedactor({ rules: [] })).toBe(noRedaction);
    expect(noRedaction("ann@example.org")).toBe("ann@example.org");
  });
});

describe("redactValue", () => {
  it("redacts every string of a JSON value, keys too, and keeps numbers, booleans and null", () => {
    const value = { to: "ann@example.org", amount: 12, ok: true, none: null, items: [{ "bob@example.org": "4111 1111 1111 1111" }], at: new Date(0) };
    expect(redactValue(defaultRedactor, value)).toEqual({
      to: "***@example.org",
      amount: 12,
      ok: true,
      none: null,
      items: [{ "***@example.org": "[card …1111]" }],
      at: "1970-01-01T00:00:00.000Z",
    });
    expect(value.to).toBe("ann@example.org");
  });

  it("redacts an error's message and stack, and stops at a depth no trace or preview reaches", () => {
    const redacted = redactValue(defaultRedactor, { error: new Error("no mailbox ann@example.org") }) as { error: { name: string; message: string; stack: string } };
    expect(redacted.error.name).toBe("Error");
    expect(redacted.error.message).toBe("no mailbox ***@example.org");
    expect(redacted.error.stack).not.toContain("ann@");
    let deep: unknown = "ann@example.org";
    for (let level = 0; level < 100; level++) deep = [deep];
    expect(JSON.stringify(redactValue(defaultRedactor, deep))).not.toContain("ann@");
  });

  it("returns the value itself when nothing is redacted", () => {
    const value = { to: "ann@example.org" };
    expect(redactValue(noRedaction, value)).toBe(value);
  });
});

describe("redactLogger", () => {
  it("redacts every line's message and fields, once however often it is wrapped", () => {
    const lines: { level: string; data: Record<string, unknown>; message: string }[] = [];
    const inner: Logger = {
      info: (data, message) => lines.push({ level: "info", data, message }),
      warn: (data, message) => lines.push({ level: "warn", data, message }),
      error: (data, message) => lines.push({ level: "error", data, message }),
    };
    const logger = redactLogger(inner, defaultRedactor);
    expect(redactLogger(logger, defaultRedactor)).toBe(logger);
    expect(redactLogger(silentLogger, defaultRedactor)).toBe(silentLogger);
    expect(redactLogger(inner, noRedaction)).toBe(inner);
    logger.info({ to: "ann@example.org" }, "mail for bob@example.org");
    logger.warn({ nested: { card: "4111-1111-1111-1111" } }, "warned");
    logger.error({ error: "TypeError: 5555555555554444 refused" }, "failed");
    expect(lines).toEqual([
      { level: "info", data: { to: "***@example.org" }, message: "mail for ***@example.org" },
      { level: "warn", data: { nested: { card: "[card …1111]" } }, message: "warned" },
      { level: "error", data: { error: "TypeError: [card …4444] refused" }, message: "failed" },
    ]);
  });
});
