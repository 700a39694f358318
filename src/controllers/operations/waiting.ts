// Waiting for the platform's operations (withOperations, the layer's `Waiting`): the operations of
// a resource's last change, in its status, waited for before its platform object is looked at
// again; the words a resource shows while they run (or while the platform retries one); and when
// to look first after a change. One project's tracker answers every resource waiting in it with
// one list (src/platform/operations.ts).
import type { StatusOperation } from "../../api/operations.ts";
import {
  isSettled,
  type Operation,
  type OperationsOutcome,
  type PlatformClient,
} from "../../platform/index.ts";
import type { Option, Settled, Waiting } from "../managed/features.ts";
import type { Pass, Verdict } from "../managed/kind.ts";
import { nextPoll } from "../managed/polling.ts";
import { Refusal } from "../managed/refusal.ts";
import { firstLook } from "./looks.ts";

/** The status every kind waiting on operations has. */
export interface OperationsStatus {
  operations?: StatusOperation[] | undefined;
  observedGeneration?: number | undefined;
  conditions?: { type: string; status: string; reason: string; message: string }[] | undefined;
}

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

/**
 * Waits out the operations of the resource's last change, as recorded in its status. Still
 * running: what to show (while nothing new happened, the status keeps saying what is under way,
 * "Creating", "Updating", and a poll writes nothing). Failed for good: a Refusal
 * (`OperationFailed`, retried with backoff, with a Warning). Otherwise ended, with the operations
 * as they ended.
 */
export async function lastChange<Status extends OperationsStatus>(
  run: Pass<unknown, Status, PlatformClient>,
  projectId: string | undefined,
): Promise<Settled<Status>> {
  const { status } = run;
  const before = status.operations;
  if (projectId === undefined || !operationsRunning(before)) {
    return { state: "ended", status: { operations: before } as Partial<Status> };
  }
  const outcome = await run.client.waitForOperations(projectId, trackedOperations(before ?? [], projectId), {
    wake: { key: run.mark, call: () => run.wake() },
  });
  const operations = statusOperations(outcome.operations);
  if (outcome.state === "failed") {
    throw new Refusal<Status>(
      "OperationFailed",
      "transient",
      `operation ${describeOperations(outcome.failed)} failed (failures_count ${outcome.failuresCount})`,
      { status: { operations } as Partial<Status>, warn: true },
    );
  }
  if (outcome.state !== "running") return { state: "ended", status: { operations } as Partial<Status> };
  let [reason, message] = waitingFor(outcome);
  const ready = status.conditions?.find((c) => c.type === "Ready");
  if (
    reason === "OperationsRunning" &&
    ready?.status === "False" &&
    sameOperations(before, operations) &&
    status.observedGeneration === run.obj.metadata.generation
  ) {
    [reason, message] = [ready.reason, ready.message];
  }
  const verdict: Verdict = ["False", reason, message];
  return {
    state: "running",
    status: { operations } as Partial<Status>,
    ready: verdict,
    // Alone in its project (or waiting on its next change's turn), when a look could tell more;
    // else on the shared poll ticks.
    retryAfterMs: outcome.nextLookMs ?? nextPoll(outcome.retryAfterMs),
  };
}

/**
 * The option: a kind whose changes start the platform's operations in the project `projectOf`
 * names waits for them (`pollMs`: the poll interval, about 5 s as the platform recommends).
 */
export function withOperations<Spec, Status extends OperationsStatus>(
  projectOf: (spec: Spec, status: Status) => string | undefined,
  pollMs: number,
): Option<Spec, Status, PlatformClient> {
  const waiting: Waiting<Spec, Status, PlatformClient> = {
    settle: (run) =>
      lastChange(run as Pass<unknown, Status, PlatformClient>, projectOf(run.spec, run.status)),
    record: (operations) => ({ operations: statusOperations(operations as Operation[]) }) as Partial<Status>,
    firstLook: (run, operations) => firstLook(run.client, operations as Operation[], pollMs),
    scope: projectOf,
  };
  return (features) => (features.waiting = waiting);
}
