/**
 * Mirrors the events of runs executed by other processes into this process's hub, so a client
 * can (re)connect to any API process: a run's log is loaded once, then followed by each NOTIFY
 * (which carries a small batch's events, or names the runs to read), with a periodic read as the
 * fallback for a lost notification. One tail query
 * covers every followed run; at most one is in flight, and a wake-up during it runs another.
 */
import type pg from "pg";
import type { RunEvent, RunEventDraft } from "../../../core/index.js";
import type { Logger } from "../../../core/logger.js";
import { ATTEMPT_SEQ_STRIDE, attemptOfSeq, type EventHub, type RunEventBuffer } from "../../../stream/index.js";

interface Followed {
  tenantId: string;
  runId: string;
  hub: EventHub;
  buffer: RunEventBuffer;
}

const key = (tenantId: string, runId: string): string => `${tenantId}\u0000${runId}`;

export class PgEventFollower {
  readonly #pool: pg.Pool;
  readonly #logger: Logger;
  readonly #followed = new Map<string, Followed>();
  #tail: Promise<void> | undefined;
  #isTailAgain = false;
  readonly #fallback: NodeJS.Timeout;

  constructor(pool: pg.Pool, logger: Logger, fallbackMs: number) {
    this.#pool = pool;
    this.#logger = logger;
    this.#fallback = setInterval(() => this.wake("*"), fallbackMs);
    this.#fallback.unref();
  }

  /** Loads the run's log into the hub and follows it; waits up to `waitMs` for `atLeastSeq`. */
  async follow(hub: EventHub, tenantId: string, runId: string, attempt: number, atLeastSeq = 0, waitMs = 2_000): Promise<RunEventBuffer> {
    const id = key(tenantId, runId);
    let followed = this.#followed.get(id);
    if (!followed) {
      const existing = hub.get(tenantId, runId);
      const buffer = existing && existing.firstSeq >= (attempt - 1) * ATTEMPT_SEQ_STRIDE + 1 ? existing : hub.ensure(tenantId, runId, attempt);
      followed = { tenantId, runId, hub, buffer };
      if (!buffer.terminalEvent) this.#followed.set(id, followed);
      await this.#read([followed]);
    }
    if (followed.buffer.lastSeq < atLeastSeq && !followed.buffer.terminalEvent) await this.#waitFor(followed, atLeastSeq, waitMs);
    return followed.buffer;
  }

  unfollow(tenantId: string, runId: string): void {
    this.#followed.delete(key(tenantId, runId));
  }

  /** A NOTIFY payload (`PgEventWriter`'s): the events written, or the run ids written ("*" for any). */
  wake(payload: string): void {
    if (this.#followed.size === 0) return;
    if (payload.startsWith("{")) {
      // Carried in the notice: appended now, and the log is read only where one did not follow on.
      if (this.#appendCarried(payload)) this.#tailAll();
      return;
    }
    if (payload !== "*") {
      const runIds = new Set(payload.split(","));
      if (![...this.#followed.values()].some((followed) => runIds.has(followed.runId))) return;
    }
    this.#tailAll();
  }

  /** Appends the events a notice carried to the runs followed here; true if one did not follow on (a gap, a new attempt). */
  #appendCarried(payload: string): boolean {
    let events: [tenantId: string, runId: string, seq: number, json: string][];
    try {
      events = (JSON.parse(payload) as { events: typeof events }).events;
    } catch {
      return true;
    }
    let isMissing = false;
    for (const [tenantId, runId, seq, json] of events) {
      const followed = this.#followed.get(key(tenantId, runId));
      if (!followed || seq <= followed.buffer.lastSeq) continue;
      if (seq === followed.buffer.lastSeq + 1 && attemptOfSeq(seq) === attemptOfSeq(followed.buffer.firstSeq)) this.#append(followed, seq, json);
      else isMissing = true;
    }
    return isMissing;
  }

  /** Reads every followed run's log after its last seq: at most one read in flight, and one more if woken meanwhile. */
  #tailAll(): void {
    if (this.#tail) {
      this.#isTailAgain = true;
      return;
    }
    this.#tail = this.#readUntilQuiet().finally(() => (this.#tail = undefined));
  }

  async #readUntilQuiet(): Promise<void> {
    do {
      this.#isTailAgain = false;
      await this.#read([...this.#followed.values()]).catch((error: unknown) => {
        this.#logger.warn({ error: String(error) }, "reading the shared event log failed; retrying on the next wake-up");
      });
    } while (this.#isTailAgain);
  }

  /** Reads every event after each run's last seq and appends it, in order. */
  async #read(runs: Followed[]): Promise<void> {
    if (runs.length === 0) return;
    const { rows } = await this.#pool.query<{ tenant_id: string; run_id: string; seq: number; event: string }>(
      `SELECT e.tenant_id, e.run_id, e.seq, e.event
       FROM unnest($1::text[], $2::text[], $3::bigint[]) AS f(tenant_id, run_id, after_seq)
       JOIN run_events e ON e.tenant_id = f.tenant_id AND e.run_id = f.run_id AND e.seq > f.after_seq
       ORDER BY e.tenant_id, e.run_id, e.seq`,
      [runs.map((run) => run.tenantId), runs.map((run) => run.runId), runs.map((run) => run.buffer.lastSeq)],
    );
    for (const row of rows) {
      const followed = this.#followed.get(key(row.tenant_id, row.run_id)) ?? runs.find((run) => run.runId === row.run_id);
      if (followed) this.#append(followed, Number(row.seq), row.event);
    }
  }

  #append(followed: Followed, seq: number, json: string): void {
    if (seq <= followed.buffer.lastSeq) return;
    if (attemptOfSeq(seq) > attemptOfSeq(followed.buffer.firstSeq)) {
      // A later attempt (the run was handed over or recovered): its own buffer, which supersedes this one.
      followed.buffer = followed.hub.ensure(followed.tenantId, followed.runId, attemptOfSeq(seq));
    }
    if (seq !== followed.buffer.lastSeq + 1) {
      this.#logger.warn({ run_id: followed.runId, seq, last_seq: followed.buffer.lastSeq }, "gap in the shared event log");
      return;
    }
    // The attempt's stream has ended: whatever another writer left after it is not part of it.
    if (followed.buffer.terminalEvent) {
      this.#logger.warn({ run_id: followed.runId, seq, terminal_seq: followed.buffer.terminalEvent.seq }, "an event after the terminal one in the shared event log, ignored");
      return;
    }
    const { seq: _seq, ...draft } = JSON.parse(json) as RunEvent;
    followed.buffer.append(draft as RunEventDraft);
    if (followed.buffer.terminalEvent) this.#followed.delete(key(followed.tenantId, followed.runId));
  }

  #waitFor(followed: Followed, seq: number, waitMs: number): Promise<void> {
    return new Promise((resolve) => {
      let buffer = followed.buffer;
      const done = (): void => {
        clearTimeout(timer);
        unsubscribe();
        resolve();
      };
      const onAppend = (): void => {
        if (followed.buffer.lastSeq >= seq || followed.buffer.terminalEvent) done();
        else if (followed.buffer !== buffer) {
          unsubscribe();
          buffer = followed.buffer;
          unsubscribe = buffer.subscribe(onAppend);
        }
      };
      let unsubscribe = buffer.subscribe(onAppend);
      const timer = setTimeout(done, waitMs);
      this.wake("*");
    });
  }

  close(): void {
    clearInterval(this.#fallback);
    this.#followed.clear();
  }
}
