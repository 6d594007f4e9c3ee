/**
 * The shared event log never gets a hole: a batch the database refuses for a while (a restart) is
 * written once it answers, before the batches behind it. It used to be dropped after five tries
 * (about half a second), and the other API processes then waited at the missing seq for ever: their
 * clients' streams never saw the run end (found by test/chaos-pg-outage.test.ts).
 */
import type pg from "pg";
import { expect, it } from "vitest";
import type { RunEvent } from "../../../core/index.js";
import type { Logger } from "../../../core/logger.js";
import { PgEventWriter } from "./pg-event-writer.js";

/** A pool whose first `failures` queries fail as a database that is away does; the seqs each later query wrote. */
function flakyPool(failures: number, lastSeq: number): { pool: pg.Pool; written: number[][]; tries: () => number; lastWritten: Promise<void> } {
  let tries = 0;
  const written: number[][] = [];
  let onLastWritten!: () => void;
  const lastWritten = new Promise<void>((resolve) => (onLastWritten = resolve));
  const pool = {
    query: async (_text: string, values: unknown[]) => {
      tries++;
      if (tries <= failures) throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
      written.push(values[2] as number[]);
      if ((values[2] as number[]).includes(lastSeq)) onLastWritten();
      return { rows: [], rowCount: 0 };
    },
  } as unknown as pg.Pool;
  return { pool, written, tries: () => tries, lastWritten };
}

const event = (seq: number): RunEvent => ({ type: "message.delta", run_id: "run_x", seq, message_id: "msg_x", text: "word " }) as RunEvent;

it("writes every event, in order, once the database answers again, however many tries that takes", async () => {
  const { pool, written, tries, lastWritten } = flakyPool(8, 3);
  const errors: string[] = [];
  const logger: Logger = { info: () => {}, warn: () => {}, error: (_fields, message) => errors.push(message) };
  const writer = new PgEventWriter(pool, "events", logger);
  writer.push("tenant", event(1));
  writer.push("tenant", event(2));
  // Pushed once the first batch failed: it waits behind it.
  while (tries() === 0) await new Promise(setImmediate);
  writer.push("tenant", event(3));
  await lastWritten;
  expect(written.flat()).toEqual([1, 2, 3]);
  expect(tries()).toBeGreaterThan(8);
  expect(errors).toEqual([]);
}, 10_000);
