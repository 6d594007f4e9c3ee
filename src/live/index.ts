/** Live agents (DESIGN §12): routes of events, interruptions, and publishing only what was heard. */
export { AgentHandoff, EmergencyStop, LiveEvent, UserStartedSpeaking, UserStoppedSpeaking, type LiveEventClass } from "./live-events.js";
export { LiveBridge, type LiveBridgeOptions, type LiveSink } from "./live-bridge.js";
export { RouteBuilder, type Generate, type InterruptRule, type LiveChunk, type LiveRoute, type LiveTurn } from "./live-route.js";
export { DEFAULT_INTERRUPTION, countWords, type InterruptionOptions } from "./interruption-options.js";
export { LiveInterruption, type InterruptReason } from "./live-interruption.js";
