// The platform's operations as a resource shows them: the operations of its last change, in
// status, waited for before the platform object is looked at again; and the words a resource
// shows while they run (or while the platform retries one).
import type { StatusOperation } from "../../api/operations.ts";
import { isSettled, type Operation, type OperationsOutcome } from "../../platform/index.ts";
import { Problem } from "./errors.ts";
import { nextPoll } from "./polling.ts";
import type { ManagedStatus, Pass, Verdict } from "./types.ts";

export function statusOperations(operations: readonly Operation[]): StatusOperation[] {
  return operations.map((op) => ({
    id: op.id,
    action: op.action,
    status: op.status,
    failuresCount: op.failuresCount,
    createdAt: op.createdAt,
    updatedAt: op.updatedAt,
    ...(op.retryAt === undefined ? {} : { retryAt: op.retryAt }),
  }));
}

/**
 * The operations in status, in the client's shape, so its tracker can report them as last seen
 * without a request while the account's budget is busy with changes.
 */
function trackedOperations(operations: readonly StatusOperation[], projectId: string): Operation[] {
  return operations.map((op) => ({
    ...op,
    projectId,
    branchId: undefined,
    endpointId: undefined,
    error: undefined,
    retryAt: op.retryAt,
    totalDurationMs: undefined,
  }));
}

function operationsRunning(operations: readonly StatusOperation[] | undefined): boolean {
  return (operations ?? []).some((op) => !isSettled(op));
}

/** The same operations in the same states (nothing new to tell a user). */
function sameOperations(a: readonly StatusOperation[] | undefined, b: readonly StatusOperation[]): boolean {
  return (
    a?.length === b.length &&
    a.every(
      (op, i) => op.id === b[i]?.id && op.status === b[i].status && op.failuresCount === b[i].failuresCount,
    )
  );
}

/**
 * A condition's reason and message while a change's operations run: the platform retrying a
 * failed one (`failed` with `retry_at` is not final) is named as such, with its count and next try.
 */
function waitingFor(outcome: Extract<OperationsOutcome, { state: "running" }>): [string, string] {
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

/** The last change still runs: what the resource shows meanwhile, and when it looks again. */
export interface Running<Status> {
  status: Partial<Status>;
  ready: Verdict;
  retryAfterMs: number;
}

/**
 * Waits out the operations of the resource's last change, as recorded in its status. Still
 * running: what to show (while nothing new happened, the status keeps saying what is under way,
 * "Creating", "Updating", and a poll writes nothing). Failed for good: a Problem
 * (`OperationFailed`, retried with backoff). Otherwise undefined, with the operations as they
 * ended in `ended`.
 */
export async function lastChange<Status extends ManagedStatus>(
  pass: Pass<unknown, Status>,
  projectId: string,
  ended: { operations?: StatusOperation[] | undefined },
): Promise<Running<Status> | undefined> {
  const { status } = pass;
  const before = status.operations;
  ended.operations = before;
  if (!operationsRunning(before)) return undefined;
  const outcome = await pass.client.waitForOperations(projectId, trackedOperations(before ?? [], projectId), {
    wake: { key: pass.mark, call: () => pass.wake() },
  });
  const operations = statusOperations(outcome.operations);
  ended.operations = operations;
  if (outcome.state === "failed") {
    throw new Problem<Status>(
      "OperationFailed",
      `operation ${describeOperations(outcome.failed)} failed (failures_count ${outcome.failuresCount})`,
      { status: { operations } as Partial<Status> },
    );
  }
  if (outcome.state !== "running") return undefined;
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
    status: { operations } as Partial<Status>,
    ready: ["False", reason, message],
    // Alone in its project (or waiting on its next change's turn), when a look could tell more;
    // else on the shared poll ticks.
    retryAfterMs: outcome.nextLookMs ?? nextPoll(outcome.retryAfterMs),
  };
}
