export { createSqliteStore, type SqliteStoreOptions } from "./sqlite-store.js";
export { MIGRATIONS, migrate } from "./migrations.js";
export { DatabaseLockedError } from "./database-locked-error.js";
