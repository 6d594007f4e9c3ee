import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { RuntimeObserver } from "../runtime/index.js";

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
}

/** Creates the metrics registry. */
export function createServerMetrics(): ServerMetrics {
  const registry = new Registry();
  let readActiveRuns = (): number => 0;
  new Gauge({
    name: "tidemark_active_runs",
    help: "Runs being executed by this process.",
    registers: [registry],
    collect() {
      this.set(readActiveRuns());
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
  return {
    registry,
    eventsSent,
    slowSubscribers,
    requestsRejected,
    trackActiveRuns(read) {
      readActiveRuns = read;
    },
    observer: {
      onCancelCompleted: (_run, elapsedMs) => cancelLatency.observe(elapsedMs / 1000),
      onRunEnded: (_run, outcome) => runsEnded.inc({ outcome }),
      onRunRecovered: () => recoveries.inc(),
    },
  };
}
