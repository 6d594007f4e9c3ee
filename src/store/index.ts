export type * from "./store.js";
export { StoreInvariantError, type StoreInvariant } from "./store-invariant-error.js";
export { StoreSchemaError, type StoreSchemaProblem } from "./store-schema-error.js";
