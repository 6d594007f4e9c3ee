export { createPool, createPostgresStore, type PostgresStoreOptions } from "./postgres-store.js";
