export { createSqliteStore, type SqliteStoreOptions } from "./sqlite-store.js";
export { MIGRATIONS, migrate } from "./migrations.js";
export { DatabaseLockedError } from "./file-lock.js";
