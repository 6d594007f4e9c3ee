export { createPool, createPostgresStore, openWarmConnections, type PostgresStoreOptions } from "./postgres-store.js";
