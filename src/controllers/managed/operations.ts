// What every adapter whose changes start platform operations shares: the options of a mutation,
// and the words a resource shows while the platform runs (or retries) its operations.
import type { OperationsOutcome } from "../../platform/index.ts";
import { objectKey } from "../../runtime/index.ts";
import type { Pass } from "./types.ts";

/**
 * A mutation's options: the pass's signal (a replica that stops acting aborts it) and the
 * resource as its ticket in the project's mutation gate (turns are taken in the order asked).
 */
export function mutationOptions(pass: Pass<unknown, unknown>): { signal: AbortSignal; ticket: string } {
  return { signal: pass.signal, ticket: objectKey(pass.obj) };
}

/**
 * A condition's reason and message while a change's operations run: the platform retrying a
 * failed one (`failed` with `retry_at` is not final) is named as such, with its count and next try.
 */
export function waitingFor(outcome: Extract<OperationsOutcome, { state: "running" }>): [string, string] {
  if (outcome.retrying.length === 0) {
    return ["OperationsRunning", `waiting for ${describeOperations(outcome.running)}`];
  }
  const retries = outcome.retrying
    .map((op) => `${op.action} ${op.id} failed (failures_count ${op.failuresCount}); retry at ${op.retryAt}`)
    .join(", ");
  return ["OperationRetrying", `the platform is retrying: ${retries}`];
}

/** `start_compute 1234-..., apply_config 5678-...` */
export function describeOperations(ops: readonly { action: string; id: string }[]): string {
  return ops.map((op) => `${op.action} ${op.id}`).join(", ");
}
