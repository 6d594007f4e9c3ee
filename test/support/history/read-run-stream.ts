import type { RunEvent } from "../../../src/core/index.js";
import { readSseEvents } from "../../../src/stream/index.js";
import { TERMINAL_TYPES, type StreamRead } from "./history-types.js";

/** How a read of a run's events ends, besides the terminal event. */
export interface ReadLimits {
  /** Leave (disconnect) after this many events. */
  maxEvents?: number;
  /** Leave when nothing came for this long (a run held by its model, or waiting for approval). */
  idleMs?: number;
  /** Leave after the first event of one of these types (e.g. `run.interrupted`: the approval prompt). */
  untilTypes?: readonly string[];
}

/**
 * Reads `runId`'s events over SSE from `lastEventId` (sent as `Last-Event-ID`, as a reconnecting
 * client does) until the terminal event, `maxEvents` events, one of `untilTypes`, or `idleMs` of silence; closing the
 * connection is the client's disconnect. Every frame's `id` and `event` must match its data.
 */
export async function readRunStream(url: string, runId: string, lastEventId: number, limits: ReadLimits = {}): Promise<StreamRead> {
  const controller = new AbortController();
  const headers: Record<string, string> = { accept: "text/event-stream" };
  if (lastEventId > 0) headers["last-event-id"] = String(lastEventId);
  const response = await fetch(`${url}/v1/runs/${runId}/events`, { headers, signal: controller.signal });
  const read: StreamRead = { runId, lastEventId, events: [], outcome: "refused", status: response.status };
  if (response.status !== 200 || !response.body) {
    await response.text();
    return read;
  }
  let isIdle = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const touch = (): void => {
    if (limits.idleMs === undefined) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      isIdle = true;
      controller.abort();
    }, limits.idleMs);
  };
  touch();
  read.outcome = "closed";
  try {
    for await (const message of readSseEvents(response.body, { signal: controller.signal })) {
      const event = JSON.parse(message.data) as RunEvent;
      if (String(event.seq) !== message.id || event.type !== message.event) throw new Error(`SSE frame ${message.id}/${message.event} does not match its data`);
      read.events.push(event);
      touch();
      if (TERMINAL_TYPES.has(event.type)) {
        read.outcome = "terminal";
        break;
      }
      const isWanted = limits.untilTypes?.includes(event.type) ?? false;
      if (isWanted || (limits.maxEvents !== undefined && read.events.length >= limits.maxEvents)) {
        read.outcome = "disconnected";
        break;
      }
    }
  } catch (error) {
    if (!isIdle) throw error;
    read.outcome = "idle";
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return read;
}
