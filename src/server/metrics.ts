import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { RuntimeObserver } from "../runtime/index.js";
import type { QueuedRunCounts } from "../store/index.js";

/** The server's Prometheus metrics, in a registry of its own (several servers may share a process). */
export interface ServerMetrics {
  registry: Registry;
  observer: RuntimeObserver;
  eventsSent: Counter;
  slowSubscribers: Counter;
  /** Error answers, by their stable code (every layer's). */
  requestsRejected: Counter;
  /** Connects the active-runs gauge to its source. */
  trackActiveRuns(read: () => number): void;
  /** Connects the queued-runs gauge to its source (the store, read at each scrape). */
  trackQueuedRuns(read: () => Promise<QueuedRunCounts>): void;
}

/** Creates the metrics registry. */
export function createServerMetrics(): ServerMetrics {
  const registry = new Registry();
  let readActiveRuns = (): number => 0;
  let readQueuedRuns = (): Promise<QueuedRunCounts> => Promise.resolve({ unclaimed: 0, waiting: 0 });
  new Gauge({
    name: "tidemark_active_runs",
    help: "Runs being executed by this process.",
    registers: [registry],
    collect() {
      this.set(readActiveRuns());
    },
  });
  new Gauge({
    name: "tidemark_queued_runs",
    help: "Queued runs in the store, every tenant's: unclaimed (waiting for a worker) or waiting (behind another run of their thread).",
    labelNames: ["queue"],
    registers: [registry],
    async collect() {
      // A store that cannot answer leaves the last figures: a scrape must not fail for it.
      const counts = await readQueuedRuns().catch(() => undefined);
      if (!counts) return;
      this.set({ queue: "unclaimed" }, counts.unclaimed);
      this.set({ queue: "waiting" }, counts.waiting);
    },
  });
  const cancelLatency = new Histogram({
    name: "tidemark_cancel_latency_seconds",
    help: "From a cancel accepted to run.cancelled emitted.",
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const runsEnded = new Counter({
    name: "tidemark_runs_ended_total",
    help: "Runs that ended, by outcome.",
    labelNames: ["outcome"],
    registers: [registry],
  });
  const eventsSent = new Counter({ name: "tidemark_events_sent_total", help: "Events written to SSE clients.", registers: [registry] });
  const slowSubscribers = new Counter({
    name: "tidemark_slow_subscribers_disconnected_total",
    help: "SSE subscribers cut off for falling too far behind.",
    registers: [registry],
  });
  const requestsRejected = new Counter({
    name: "tidemark_requests_rejected_total",
    help: "Requests answered with an error, by its stable code (limits, bad input, conflicts, auth).",
    labelNames: ["code"],
    registers: [registry],
  });
  const recoveries = new Counter({
    name: "tidemark_recoveries_total",
    help: "Runs whose process was lost, taken over by this one (claimed, resumed, failed or cancelled by their policy).",
    registers: [registry],
  });
  const leaseLosses = new Counter({
    name: "tidemark_lease_losses_total",
    help: "Runs whose lease was lost: fenced (this process could not renew it and stopped the run), superseded (another process had taken the run over) or recovered (this process took over a lost lease).",
    labelNames: ["outcome"],
    registers: [registry],
  });
  const chunksAfterStop = new Counter({
    name: "tidemark_chunks_after_stop_total",
    help: "Provider chunks that arrived after a run's Stop aborted its request, discarded unpublished.",
    registers: [registry],
  });
  return {
    registry,
    eventsSent,
    slowSubscribers,
    requestsRejected,
    trackActiveRuns(read) {
      readActiveRuns = read;
    },
    trackQueuedRuns(read) {
      readQueuedRuns = read;
    },
    observer: {
      onCancelCompleted: (_run, elapsedMs) => cancelLatency.observe(elapsedMs / 1000),
      onRunEnded: (_run, outcome) => {
        runsEnded.inc({ outcome });
        if (outcome === "superseded") leaseLosses.inc({ outcome: "superseded" });
      },
      onRunRecovered: (run) => {
        recoveries.inc();
        // A queued run nobody claimed had no lease to lose.
        if (run.leaseOwner !== null) leaseLosses.inc({ outcome: "recovered" });
      },
      onLeaseLost: () => leaseLosses.inc({ outcome: "fenced" }),
      onChunkAfterStop: () => chunksAfterStop.inc(),
    },
  };
}
