export type { Cluster, ControlMessage } from "./cluster.js";
export { createPgCluster, type PgClusterOptions } from "./pg-cluster.js";
