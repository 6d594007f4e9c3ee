import { systemTimers, type TimerHandle, type Timers } from "../core/timers.js";
import { RunEventBuffer } from "./run-event-buffer.js";

/** Options for {@link EventHub}. */
export interface EventHubOptions {
  /** How long a buffer is kept after its terminal event (default 15 minutes). */
  ttlMs?: number;
  /** The timers the TTL runs on (default the process's, unref'd). */
  timers?: Timers;
}

/** Seqs of attempt n start at (n − 1) × this, so a recovered attempt never reuses a seq a client saw. */
export const ATTEMPT_SEQ_STRIDE = 1_000_000_000;

/** The attempt an event's seq belongs to (each attempt has its own range of seqs). */
export const attemptOfSeq = (seq: number): number => Math.floor((seq - 1) / ATTEMPT_SEQ_STRIDE) + 1;

/** The per-run event buffers of this process, each dropped a TTL after its run ended. */
export class EventHub {
  readonly #buffers = new Map<string, RunEventBuffer>();
  readonly #ttlMs: number;
  readonly #timers: Timers;
  readonly #pending = new Set<TimerHandle>();

  constructor(options: EventHubOptions = {}) {
    this.#ttlMs = options.ttlMs ?? 15 * 60_000;
    this.#timers = options.timers ?? systemTimers;
  }

  static #key(tenantId: string, runId: string): string {
    return `${tenantId}\u0000${runId}`;
  }

  /** The buffer of a run's attempt, created on first use. */
  ensure(tenantId: string, runId: string, attempt: number): RunEventBuffer {
    const key = EventHub.#key(tenantId, runId);
    const firstSeq = (attempt - 1) * ATTEMPT_SEQ_STRIDE + 1;
    const existing = this.#buffers.get(key);
    if (existing && existing.firstSeq === firstSeq) return existing;
    // A stale attempt's writer gets a buffer nobody reads; it never replaces a newer attempt's.
    if (existing && existing.firstSeq > firstSeq) return new RunEventBuffer(runId, firstSeq);
    // A callback, not a promise per buffer: a run holds nothing for its expiry until it ends.
    const buffer = new RunEventBuffer(runId, firstSeq, (ended) => this.#expireLater(key, ended));
    this.#buffers.set(key, buffer);
    // Subscribers of the earlier attempt go on with this one (a handover, not an end).
    existing?.supersede(buffer);
    return buffer;
  }

  /** The run's current buffer, if it has not expired. */
  get(tenantId: string, runId: string): RunEventBuffer | undefined {
    return this.#buffers.get(EventHub.#key(tenantId, runId));
  }

  get size(): number {
    return this.#buffers.size;
  }

  #expireLater(key: string, buffer: RunEventBuffer): void {
    const timer = this.#timers.setTimeout(() => {
      this.#pending.delete(timer);
      if (this.#buffers.get(key) === buffer) this.#buffers.delete(key);
    }, this.#ttlMs);
    this.#pending.add(timer);
  }

  /** Drops a run's buffer now (its run's thread was erased); its expiry timer then finds nothing. */
  drop(tenantId: string, runId: string): void {
    this.#buffers.delete(EventHub.#key(tenantId, runId));
  }

  /** Drops every buffer and timer. */
  clear(): void {
    for (const timer of this.#pending) this.#timers.clear(timer);
    this.#pending.clear();
    this.#buffers.clear();
  }
}
