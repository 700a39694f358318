// Reading operations: one by id, or a project's list newest first with a
// microsecond-timestamp cursor.
import { badRequest, notFound } from "./errors.ts";
import type { OperationRecord } from "./model.ts";
import { formatCursor, parseCursor } from "./timestamps.ts";
import type { World } from "./world.ts";

export function getOperation(world: World, projectId: string, operationId: string): OperationRecord {
  const op = world.operations.get(operationId);
  if (!op || op.projectId !== projectId) throw notFound("operation");
  return op;
}

/**
 * Newest first; the cursor is the creation time of the page's last operation
 * and is always returned, even on a short or empty last page.
 */
export function listOperations(
  world: World,
  projectId: string,
  query: { limit: number; cursor?: string | undefined },
  now: number,
): { operations: OperationRecord[]; cursor: string } {
  const all = world.operationsByProject.get(projectId);
  if (!all) throw notFound("project");
  let before = Number.POSITIVE_INFINITY;
  if (query.cursor !== undefined) {
    const parsed = parseCursor(query.cursor);
    if (parsed === undefined) throw badRequest("cursor: not a pagination cursor");
    before = parsed;
  }
  // Eventual consistency: operations younger than the lag are not listed yet.
  if (world.operationsListLagMs > 0) before = Math.min(before, (now - world.operationsListLagMs) * 1000);
  // Operations are stored oldest first with strictly increasing times: find the first one at or after the cursor.
  let lo = 0;
  let hi = all.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (all[mid]!.createdMicros < before) lo = mid + 1;
    else hi = mid;
  }
  const operations: OperationRecord[] = [];
  for (let i = lo - 1; i >= 0 && operations.length < query.limit; i--) operations.push(all[i]!);
  const last = operations.at(-1);
  const cursor = last
    ? formatCursor(last.createdMicros)
    : (query.cursor ?? formatCursor(Math.floor(now * 1000)));
  return { operations, cursor };
}
