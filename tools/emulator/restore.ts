// Restoring a branch to the head of another branch (for a child: reset from
// its parent). Its roles, databases and data become the source's; with
// `preserve_under_name` the old state is kept as a new branch that takes over
// its children. Point-in-time restores are not emulated.
import { restrictedAction } from "./anonymized.ts";
import { currentLsn } from "./branch-history.ts";
import { copyCatalog } from "./catalog.ts";
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
  if (pointInTime) {
    throw badRequest("source_lsn, source_timestamp: restoring to a point in time is not emulated");
  }
  const siblings = [...world.branches.values()].filter((b) => b.projectId === branch.projectId);
  const children = siblings.filter((b) => b.parentId === branch.id);
  const preserveName = body.preserve_under_name;
  if (children.length > 0 && !preserveName) {
    throw badRequest("preserve_under_name: required when the branch has child branches");
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
      startLsn: currentLsn(branch),
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
  copyCatalog(world, source, branch, now);
  world.data?.branchRestored(branch, source);
  // Its history starts again from the source's head: what it was before is the preserved branch's.
  branch.startLsn = currentLsn(source);
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
