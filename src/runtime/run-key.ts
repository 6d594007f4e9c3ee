/** The key of a run in this process's maps (active executions, approval waiters). */
export function runKey(tenantId: string, runId: string): string {
  return `${tenantId}\u0000${runId}`;
}
