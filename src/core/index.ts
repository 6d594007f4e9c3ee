export * from "./run-status.js";
export * from "./records.js";
export * from "./run-event.js";
export * from "./error-codes.js";
export * from "./tidemark-error.js";
export * from "./ids.js";
export * from "./clock.js";
export * from "./hash.js";
