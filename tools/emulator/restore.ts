// Restoring a branch to the head of another branch (for a child: reset from
// its parent), or to a point of a branch's history (its own too, for a root
// branch). Its roles, databases and data become the source's; with
// `preserve_under_name` the old state is kept as a new branch that takes over
// its children.
import { restrictedAction } from "./anonymized.ts";
import { currentLsn, resolvePoint } from "./branch-history.ts";
import { copyCatalog, databasesOf } from "./catalog.ts";
import { PlatformError, badRequest, notFound } from "./errors.ts";
import { newBranchId } from "./ids.ts";
import type { BranchRecord, OperationRecord } from "./model.ts";
import type { RestoreBranchBody } from "./requests.ts";
import type { OperationSpec, World } from "./world.ts";

export interface BranchRestore {
  branch: BranchRecord;
  /** The branch that keeps the old state, when `preserve_under_name` asked for one. */
  preserved?: BranchRecord;
  operations: OperationRecord[];
}

export function restoreBranch(
  world: World,
  branch: BranchRecord,
  body: RestoreBranchBody,
  now: number,
): BranchRestore {
  const source = world.branches.get(body.source_branch_id);
  if (!source || source.projectId !== branch.projectId) throw notFound("source branch");
  const restricted = restrictedAction(branch, "restore");
  if (restricted) throw new PlatformError(422, restricted);
  const pointInTime = body.source_lsn !== undefined || body.source_timestamp !== undefined;
  if (source.id === branch.id && !pointInTime) {
    throw badRequest("source_timestamp or source_lsn: required to restore a branch from its own history");
  }
  const self = source.id === branch.id;
  if (self && branch.parentId !== undefined) {
    // The docs: instant restore (a branch to its own history) is for root branches only.
    throw badRequest(`branch ${branch.id} has a parent: only a root branch restores from its own history`);
  }
  if (pointInTime && source.restore?.status !== undefined) {
    // The docs' words for a point-in-time restore of a branch a snapshot's restore made.
    throw new PlatformError(422, "restore from snapshot on target branch is still ongoing");
  }
  const point = resolvePoint(
    world,
    source,
    { timestamp: body.source_timestamp, lsn: body.source_lsn },
    { timestamp: "source_timestamp", lsn: "source_lsn" },
    now,
  );
  const siblings = [...world.branches.values()].filter((b) => b.projectId === branch.projectId);
  const children = siblings.filter((b) => b.parentId === branch.id);
  const preserveName = body.preserve_under_name;
  if (children.length > 0 && !preserveName) {
    throw badRequest("preserve_under_name: required when the branch has child branches");
  }
  if (self && !preserveName) {
    throw badRequest("preserve_under_name: required to restore a branch from its own history");
  }
  if (preserveName && siblings.some((b) => b.name === preserveName)) {
    throw new PlatformError(409, `branch ${preserveName} already exists`);
  }
  if (branch.currentState === "init" || source.currentState === "init") {
    throw new PlatformError(422, "branch not ready yet");
  }
  world.assertUnlocked(branch.projectId, [branch.id, source.id]);

  let preserved: BranchRecord | undefined;
  if (preserveName) {
    preserved = {
      id: newBranchId(),
      projectId: branch.projectId,
      name: preserveName,
      ...(branch.parentId === undefined ? {} : { parentId: branch.parentId }),
      startLsn: branch.startLsn ?? currentLsn(branch),
      ...(branch.lsnHistory === undefined ? {} : { lsnHistory: branch.lsnHistory }),
      primary: false,
      createdAt: now,
      updatedAt: now,
      currentState: "ready",
      stateChangedAt: now,
      roles: branch.roles ?? [],
      databases: branch.databases ?? [],
    };
    world.addBranch(preserved);
    for (const child of children) child.parentId = preserved.id;
    world.data?.branchPreserved(branch, preserved);
  }
  copyCatalog(world, source, branch, now, point?.at);
  // From its own history, the data is the preserved branch's now (it took the old data over).
  world.data?.branchRestored(branch, self && preserved ? preserved : source, {
    ...(point === undefined ? {} : { at: point.at }),
    databases: databasesOf(branch).map((d) => d.name),
  });
  // Its history starts again at the point it was restored to: what it was is the preserved branch's.
  branch.startLsn = point?.lsn ?? currentLsn(source);
  delete branch.lsnHistory;
  branch.lastResetAt = now;
  branch.updatedAt = now;

  // The computes restart on the new timeline.
  const active = world.endpointsOfBranch(branch.id).filter((e) => e.currentState === "active");
  const chain: OperationSpec[] = [
    ...active.map((e) => ({ action: "suspend_compute" as const, branchId: branch.id, endpointId: e.id })),
    { action: "create_timeline", branchId: branch.id },
    ...active.map((e) => ({ action: "start_compute" as const, branchId: branch.id, endpointId: e.id })),
  ];
  const operations = world.startOperations(branch.projectId, chain, now);
  return { branch, ...(preserved === undefined ? {} : { preserved }), operations };
}
