export { checkThread, type Violation } from "./check-thread.js";
export { checkStore, formatCheckReport, type CheckReport, type CheckStoreOptions } from "./check-store.js";
