// What every adapter whose changes start platform operations shares: the options of a mutation,
// and the words a resource shows while the platform runs (or retries) its operations.
import type { EndpointOperation } from "../../api/computeendpoint.ts";
import type { OperationsOutcome } from "../../platform/index.ts";
import { objectKey } from "../../runtime/index.ts";
import { nextPoll } from "../computeendpoint-polling.ts";
import {
  operationsRunning,
  sameOperations,
  statusOperations,
  trackedOperations,
} from "../computeendpoint-status.ts";
import { Problem } from "./failures.ts";
import type { Observation, Pass } from "./types.ts";

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

/** What the platform's operations of a resource's last change say now. */
export type LastChange<Status> =
  | { running: true; observation: Observation<Status, never> }
  | { running: false; operations: EndpointOperation[] | undefined };

/**
 * Step 1 of an adapter's observe: waits out the operations of the resource's last change, as
 * recorded in its status. Still running: the observation to report (while nothing new happened,
 * the status keeps saying what is under way, "Creating", "Updating", and a poll writes nothing).
 * Failed for good: a Problem (`OperationFailed`, retried with backoff). Otherwise the operations
 * as they ended.
 */
export async function lastChange<
  Status extends {
    operations?: EndpointOperation[] | undefined;
    observedGeneration?: number | undefined;
    conditions?: { type: string; status: string; reason: string; message: string }[] | undefined;
  },
>(
  pass: Pass<unknown, Status>,
  projectId: string,
  endpointId: string | undefined,
): Promise<LastChange<Status>> {
  const { status } = pass;
  const before = status.operations;
  if (!operationsRunning(before)) return { running: false, operations: before };
  const outcome = await pass.client.waitForOperations(
    projectId,
    trackedOperations(before ?? [], projectId, endpointId),
  );
  const operations = statusOperations(outcome.operations);
  if (outcome.state === "failed") {
    throw new Problem<Status>(
      "OperationFailed",
      `operation ${describeOperations(outcome.failed)} failed (failures_count ${outcome.failuresCount})`,
      { status: { operations } as Partial<Status> },
    );
  }
  if (outcome.state !== "running") return { running: false, operations };
  let [reason, message] = waitingFor(outcome);
  const ready = status.conditions?.find((c) => c.type === "Ready");
  if (
    reason === "OperationsRunning" &&
    ready?.status === "False" &&
    sameOperations(before, operations) &&
    status.observedGeneration === pass.obj.metadata.generation
  ) {
    [reason, message] = [ready.reason, ready.message];
  }
  return {
    running: true,
    observation: {
      state: "busy",
      status: { operations } as Partial<Status>,
      reason,
      message,
      retryAfterMs: nextPoll(outcome.retryAfterMs),
    },
  };
}
