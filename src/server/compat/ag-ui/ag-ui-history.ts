import type { Runtime } from "../../../runtime/index.js";
import type { AgUiHistoryLookup } from "./ag-ui-translator.js";

/** How far back a lookup reads: a tool call and its result are among a run's last messages. */
const RECENT_MESSAGES = 50;

/** Reads tool calls and results from the thread's history (published messages only). */
export function createAgUiHistoryLookup(runtime: Runtime, tenantId: string, threadId: string): AgUiHistoryLookup {
  const recent = () => runtime.store.listMessages(tenantId, threadId, { limit: RECENT_MESSAGES });
  return {
    async toolCall(toolCallId) {
      for (const message of (await recent()).reverse()) {
        const call = message.toolCalls?.find((candidate) => candidate.toolCallId === toolCallId);
        if (call) return { input: call.input, messageId: message.messageId };
      }
      return undefined;
    },
    async messageContent(messageId) {
      return (await recent()).find((message) => message.messageId === messageId)?.content;
    },
  };
}
