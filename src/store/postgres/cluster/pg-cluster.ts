/**
 * The cluster over PostgreSQL: LISTEN/NOTIFY wakes workers and carries control messages (a cancel
 * reaches the owning worker in milliseconds), and `run_events` with a NOTIFY per batch fans every
 * run's events out to every API process.
 */
import type { RunEvent } from "../../../core/index.js";
import { silentLogger, type Logger } from "../../../core/logger.js";
import type { EventHub, RunEventBuffer } from "../../../stream/index.js";
import { createPool, openWarmConnections } from "../index.js";
import type { Cluster, ControlMessage } from "../../../runtime/cluster.js";
import { PgEventFollower } from "./pg-event-follower.js";
import { PgEventWriter } from "./pg-event-writer.js";
import { PgListener } from "./pg-listener.js";

export interface PgClusterOptions {
  url: string;
  /** The store's schema, if it has its own: channels are named after it, so two deployments on one database never meet. */
  schema?: string;
  logger?: Logger;
  /** How often followed runs are read even without a notification (default 1000 ms). */
  eventPollMs?: number;
}

/** Connects the cluster's pool and its LISTEN connection. */
export async function createPgCluster(options: PgClusterOptions): Promise<Cluster> {
  const logger = options.logger ?? silentLogger;
  const prefix = `tidemark_${options.schema ?? "public"}`;
  const channels = { control: `${prefix}_control`, queued: `${prefix}_queued`, events: `${prefix}_events` };
  // The event writer and the follower each keep at most one query in flight; notifies are short.
  const pool = createPool({ url: options.url, schema: options.schema, poolSize: 3, warmConnections: 2, logger });
  const writer = new PgEventWriter(pool, channels.events, logger);
  const follower = new PgEventFollower(pool, logger, options.eventPollMs ?? 1_000);
  const controlListeners: ((message: ControlMessage) => void)[] = [];
  const queuedListeners: (() => void)[] = [];
  const listener = new PgListener({
    url: options.url,
    channels: Object.values(channels),
    logger,
    onNotification(channel, payload) {
      if (channel === channels.events) follower.wake(payload);
      else if (channel === channels.queued) for (const listen of queuedListeners) listen();
      else if (channel === channels.control) {
        const message = parseControl(payload);
        if (message) for (const listen of controlListeners) listen(message);
      }
    },
    onReconnect() {
      // Whatever was said while we were away: read the logs, look for work.
      follower.wake("*");
      for (const listen of queuedListeners) listen();
    },
  });
  try {
    await listener.start();
    await openWarmConnections(pool);
  } catch (error) {
    await pool.end();
    throw error;
  }
  const notify = (channel: string, payload: string): Promise<unknown> => pool.query("SELECT pg_notify($1, $2)", [channel, payload]);
  return {
    announceQueued() {
      notify(channels.queued, "").catch((error: unknown) => logger.warn({ error: String(error) }, "could not wake the workers"));
    },
    async sendControl(message) {
      await notify(channels.control, JSON.stringify(message));
    },
    onControl(listen) {
      controlListeners.push(listen);
    },
    onQueued(listen) {
      queuedListeners.push(listen);
    },
    publishEvent(tenantId: string, event: RunEvent) {
      writer.push(tenantId, event);
    },
    follow(hub: EventHub, tenantId: string, runId: string, attempt: number, atLeastSeq?: number): Promise<RunEventBuffer> {
      return follower.follow(hub, tenantId, runId, attempt, atLeastSeq);
    },
    unfollow(tenantId, runId) {
      follower.unfollow(tenantId, runId);
    },
    async pruneEvents(before) {
      const result = await pool.query(
        `DELETE FROM run_events e USING runs r
         WHERE e.tenant_id = r.tenant_id AND e.run_id = r.run_id AND r.ended_at IS NOT NULL AND r.ended_at < $1`,
        [before],
      );
      return result.rowCount ?? 0;
    },
    async close() {
      await writer.flush();
      follower.close();
      await listener.close();
      await pool.end();
    },
  };
}

function parseControl(payload: string): ControlMessage | undefined {
  try {
    const message = JSON.parse(payload) as ControlMessage;
    return typeof message.tenantId === "string" && typeof message.runId === "string" ? message : undefined;
  } catch {
    return undefined;
  }
}
