// When a resource looks at the platform, and how old a list it may read. The project's tracker
// decides the first look after a change (src/platform/operations.ts); lists of a project are
// snapshots shared by its resources and kept current by this operator's own changes, so only
// changes made elsewhere wait for a fresh one.
import type { Operation, PlatformClient } from "../../platform/index.ts";
import type { KubeObject } from "../../runtime/index.ts";
import { nextPoll, observeInterval } from "../managed/polling.ts";

/**
 * When to look first after a change. The project decides (src/platform/operations.ts,
 * `firstLook`): a change alone in its project when such operations have most likely ended; one
 * whose project has changes waiting for their turn when the next should have been accepted
 * (which proves this one's ended). Otherwise, when operations like its own usually finish, on a
 * one-second grid so the resources changed together look together; before anything is learned,
 * or for slow operations, on the next poll tick.
 */
export function firstLook(
  client: PlatformClient,
  operations: readonly Operation[],
  pollMs: number,
  now = Date.now(),
): number {
  const projectId = operations[0]?.projectId;
  const chosen =
    projectId === undefined ? undefined : client.project(projectId).firstLook(operations, pollMs);
  if (chosen !== undefined) return chosen;
  const expected = client.expectedDuration(operations);
  if (expected === undefined || expected >= pollMs) return nextPoll(pollMs, now);
  return Math.ceil((now + expected + 250) / 1_000) * 1_000 - now;
}

/**
 * How old a project's list may be for looking at drift: one resync period, or the resource's own
 * observe interval. Changes this operator makes are recorded in the list as they happen, so only
 * changes made elsewhere wait for it; the idle cost is then about one list request per project
 * per resync.
 */
export function observeMaxAge(obj: KubeObject, resyncPeriodMs: number): number {
  const ms = observeInterval(obj);
  return ms !== undefined ? Math.min(ms, resyncPeriodMs) : resyncPeriodMs;
}

/**
 * What `match` picks in a project's list: a snapshot shared by the project's resources and kept
 * current by this operator's own changes (a create storm does not list the project once per
 * resource and pass), as old as `observeMaxAge` allows. Where a change made elsewhere matters
 * (`unsure` of what the snapshot answered), a fresh list decides.
 */
export async function lookUp<T>(
  obj: KubeObject,
  resyncPeriodMs: number,
  list: (maxAgeMs: number) => Promise<readonly T[]>,
  match: (list: readonly T[]) => T | undefined,
  unsure: (found: T | undefined) => boolean = (found) => found === undefined,
): Promise<T | undefined> {
  const found = match(await list(observeMaxAge(obj, resyncPeriodMs)));
  return unsure(found) ? match(await list(0)) : found;
}
