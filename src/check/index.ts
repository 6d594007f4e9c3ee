export { checkThread, type Violation } from "./check-thread.js";
export { checkStore, formatCheckReport, type CheckReport, type CheckStoreOptions } from "./check-store.js";
export { DEFAULT_STALE_AFTER_MS, findStaleRuns, type StaleRun, type StaleRunOptions } from "./find-stale-runs.js";
export { INVARIANTS } from "./invariants.js";
export { LineageWalker, ownLineage, type ThreadLineage } from "./lineage-walker.js";
