import { titleFromText } from "../core/heuristic-title.js";
import type { Clock, ThreadRecord } from "../core/index.js";
import type { Logger } from "../core/logger.js";
import type { ChatModel } from "../core/model.js";
import type { Store } from "../store/index.js";
import { runInBackground } from "./background.js";

/** What naming a thread needs. */
export interface SaveTitlePorts {
  store: Store;
  model: ChatModel;
  clock: Clock;
  logger: Logger;
}

/** Names a new thread after its first message, in the background and its own transaction, whatever the run's fate or the client's. */
export function saveTitle(ports: SaveTitlePorts, thread: ThreadRecord, firstMessage: string): void {
  const { store, model, clock, logger } = ports;
  runInBackground(logger, "title", async () => {
    // The model's title when it gives one in time; else the heuristic, so a thread is always named.
    const fromModel = await model.title?.(firstMessage, { signal: AbortSignal.timeout(10_000) }).catch((error: unknown) => {
      logger.warn({ thread_id: thread.threadId, tenant_id: thread.tenantId, error: String(error) }, "the model gave no title; using the first words");
      return undefined;
    });
    const title = fromModel?.trim() || titleFromText(firstMessage);
    await store.saveTitle(thread.tenantId, thread.threadId, title.slice(0, 200), clock.now());
  }, { thread_id: thread.threadId, tenant_id: thread.tenantId });
}
