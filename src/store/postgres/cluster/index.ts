export { createPgCluster, type PgClusterOptions } from "./pg-cluster.js";
