export { RunEventBuffer } from "./run-event-buffer.js";
export { EventHub, ATTEMPT_SEQ_STRIDE, attemptOfSeq, type EventHubOptions } from "./event-hub.js";
export { streamRunEvents, type SseConnectionOptions } from "./sse-connection.js";
export { formatSseFrame, formatSseComment } from "./sse-frame.js";
export { readSseEvents, type SseMessage } from "./read-sse.js";
export { followEvents } from "./follow-events.js";
