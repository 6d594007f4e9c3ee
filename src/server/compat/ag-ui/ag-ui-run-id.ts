import { createHash } from "node:crypto";
import { TypeID } from "typeid-js";

/**
 * The Tidemark run id of an AG-UI run: derived from the client's `runId` (the first 128 bits of
 * its SHA-256, as a TypeID), so the run is found again from that id alone, by the explicit
 * cancel among others, with nothing stored for the mapping. Run ids are scoped by tenant, so two
 * tenants' runs with the same AG-UI id never meet; the native API lets a client name its run the
 * same way (`run_id`), so this is no new kind of id.
 */
export function agUiRunIdOf(agUiRunId: string): string {
  const digest = createHash("sha256").update(`ag-ui:run:${agUiRunId}`).digest();
  return TypeID.fromUUIDBytes("run", new Uint8Array(digest.subarray(0, 16))).toString();
}
