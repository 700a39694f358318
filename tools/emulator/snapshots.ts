// Snapshots: a root branch's data at a point (now, or a timestamp or LSN within its restore
// window), kept apart from the branch with the roles and databases it had, until deleted or
// expired. A restore makes a new branch of it; finalizing the restore puts that branch in the
// place of the branch it replaces (its name, its computes, its protection, default or not),
// and the replaced branch stays as `<name> (old)` (the platform's docs, backup-restore guide).
import { restrictedAction } from "./anonymized.ts";
import { currentLsn, resolvePoint } from "./branch-history.ts";
import { branchesOfProject } from "./branches.ts";
import { copyCatalogRecords, databasesOf, rolesOf } from "./catalog.ts";
import { PlatformError, badRequest, notFound } from "./errors.ts";
import { newBranchId, newSnapshotId } from "./ids.ts";
import type { BranchRecord, EndpointRecord, OperationRecord, SnapshotRecord } from "./model.ts";
import { projectLimits } from "./plans.ts";
import type { CreateSnapshotQuery, RestoreSnapshotBody, UpdateSnapshotBody } from "./requests.ts";
import type { OperationSpec, World } from "./world.ts";

/**
 * Manual snapshots a project may keep: 1 on the free plan, 100 on paid plans (the docs'
 * backup-restore guide; snapshots a backup schedule takes do not count).
 */
export const manualSnapshotLimit = (plan: string): number => (plan === "free" ? 1 : 100);

export function snapshotsOfProject(world: World, projectId: string): SnapshotRecord[] {
  return [...world.snapshots.values()].filter((s) => s.projectId === projectId);
}

export function findSnapshot(world: World, projectId: string, snapshotId: string): SnapshotRecord {
  const snapshot = world.snapshots.get(snapshotId);
  if (!snapshot || snapshot.projectId !== projectId) throw notFound("snapshot");
  return snapshot;
}

function parseFutureTime(field: string, value: string, now: number): number {
  const at = Date.parse(value);
  if (at <= now) throw badRequest(`${field}: must be in the future`);
  return at;
}

/**
 * Takes a snapshot of a root branch (the docs: snapshots are taken of root branches only) at
 * `lsn` or `timestamp`, or now. It starts `timeline_mark_invisible`, which holds the project's
 * lock (a choice: the document names no action for it; a snapshot is a timeline no branch shows).
 */
export function createSnapshot(
  world: World,
  branch: BranchRecord,
  query: CreateSnapshotQuery,
  now: number,
): { snapshot: SnapshotRecord; operations: OperationRecord[] } {
  if (branch.parentId !== undefined) {
    throw badRequest(`branch ${branch.id} has a parent: snapshots are taken of root branches only`);
  }
  if (branch.currentState === "init") throw new PlatformError(422, "branch not ready yet");
  const point = resolvePoint(world, branch, query, { timestamp: "timestamp", lsn: "lsn" }, now);
  const expiresAt =
    query.expires_at === undefined ? undefined : parseFutureTime("expires_at", query.expires_at, now);
  const siblings = snapshotsOfProject(world, branch.projectId);
  if (query.slug !== undefined && siblings.some((s) => s.slug === query.slug)) {
    throw new PlatformError(409, `snapshot slug ${query.slug} already exists`);
  }
  const { plan } = projectLimits(world, branch.projectId);
  const limit = manualSnapshotLimit(plan);
  if (siblings.filter((s) => s.manual).length >= limit) {
    throw new PlatformError(422, `manual snapshots limit of ${limit} exceeded for the ${plan} plan`);
  }
  world.assertUnlocked(branch.projectId, [branch.id]);

  const id = newSnapshotId();
  const at = point?.at ?? now;
  const held: Pick<BranchRecord, "roles" | "databases"> = {};
  copyCatalogRecords(
    world,
    {
      roles: rolesOf(branch).filter((r) => r.createdAt <= at),
      databases: databasesOf(branch).filter((d) => d.createdAt <= at),
    },
    held,
    now,
  );
  const snapshot: SnapshotRecord = {
    id,
    projectId: branch.projectId,
    name: query.name ?? id,
    slug: query.slug ?? id,
    sourceBranchId: branch.id,
    point: point ?? { at: now, lsn: currentLsn(branch) },
    createdAt: now,
    ...(expiresAt === undefined ? {} : { expiresAt }),
    manual: true,
    roles: held.roles ?? [],
    databases: held.databases ?? [],
  };
  world.snapshots.set(id, snapshot);
  world.data?.snapshotTaken(id, branch, {
    ...(point === undefined ? {} : { at: point.at }),
    databases: snapshot.databases.map((d) => d.name),
  });
  world.scheduleSnapshotExpiry(snapshot);
  const operations = world.startOperations(
    branch.projectId,
    [{ action: "timeline_mark_invisible", branchId: branch.id }],
    now,
  );
  return { snapshot, operations };
}

/** Renames a snapshot or changes its expiry (`null` clears it); metadata, nothing runs. */
export function updateSnapshot(
  world: World,
  snapshot: SnapshotRecord,
  body: UpdateSnapshotBody,
  now: number,
): SnapshotRecord {
  const expiresAt =
    body.expires_at === undefined || body.expires_at === null
      ? body.expires_at
      : parseFutureTime("snapshot.expires_at", body.expires_at, now);
  world.assertUnlocked(snapshot.projectId, [snapshot.sourceBranchId]);
  if (body.name !== undefined) snapshot.name = body.name;
  if (expiresAt === null) delete snapshot.expiresAt;
  else if (expiresAt !== undefined) {
    snapshot.expiresAt = expiresAt;
    world.scheduleSnapshotExpiry(snapshot);
  }
  world.changed();
  return snapshot;
}

/** Deletes a snapshot and its data; `delete_timeline` runs (the document answers 202 with operations). */
export function deleteSnapshot(world: World, snapshot: SnapshotRecord, now: number): OperationRecord[] {
  const source = world.branches.get(snapshot.sourceBranchId);
  world.assertUnlocked(snapshot.projectId, source === undefined ? [] : [source.id]);
  world.snapshots.delete(snapshot.id);
  world.data?.snapshotDeleted(snapshot.id);
  return world.startOperations(
    snapshot.projectId,
    [{ action: "delete_timeline", ...(source === undefined ? {} : { branchId: source.id }) }],
    now,
  );
}

/** A name for the replaced branch that no other branch of the project has. */
function oldName(world: World, target: BranchRecord, asked: string | undefined): string {
  const taken = (name: string) => branchesOfProject(world, target.projectId).some((b) => b.name === name);
  if (asked !== undefined) {
    if (taken(asked)) throw new PlatformError(409, `branch ${asked} already exists`);
    return asked;
  }
  let name = `${target.name} (old)`;
  for (let n = 2; taken(name); n++) name = `${target.name} (old ${n})`;
  return name;
}

/**
 * The restored branch takes the target's place: its name, protection and default flag, and its
 * computes, which restart on it (`apply_config`, and `suspend_compute` + `start_compute` for a
 * running one, as an endpoint's move does). Answers the operations to run and the moved endpoints.
 */
function takePlace(
  world: World,
  restored: BranchRecord,
  target: BranchRecord,
  replacedName: string,
  now: number,
): { specs: OperationSpec[]; endpoints: EndpointRecord[] } {
  const name = target.name;
  target.name = replacedName;
  restored.name = name;
  restored.protected = target.protected ?? false;
  target.protected = false;
  if (target.primary) {
    restored.primary = true;
    target.primary = false;
  }
  const endpoints = world.endpointsOfBranch(target.id);
  const specs: OperationSpec[] = [];
  for (const endpoint of endpoints) {
    endpoint.branchId = restored.id;
    world.touch(endpoint, now);
    specs.push({ action: "apply_config", branchId: restored.id, endpointId: endpoint.id });
    if (endpoint.currentState === "active") {
      specs.push(
        { action: "suspend_compute", branchId: restored.id, endpointId: endpoint.id },
        { action: "start_compute", branchId: restored.id, endpointId: endpoint.id },
      );
    }
  }
  restored.restore = { ...restored.restore!, status: "finalized" };
  restored.updatedAt = now;
  target.updatedAt = now;
  world.changed();
  return { specs, endpoints };
}

/**
 * Restores a snapshot as a new (root) branch with its data, roles and databases: `create_branch`
 * runs. With `finalize_restore` it takes the target's place at once (`target_branch_id`, else
 * the snapshot's source branch).
 */
export function restoreSnapshot(
  world: World,
  snapshot: SnapshotRecord,
  body: RestoreSnapshotBody & { deprecatedName?: string | undefined },
  now: number,
): { branch: BranchRecord; endpoints: EndpointRecord[]; operations: OperationRecord[] } {
  const targetId = body.target_branch_id ?? snapshot.sourceBranchId;
  const target = world.branches.get(targetId);
  const found = target !== undefined && target.projectId === snapshot.projectId ? target : undefined;
  if (body.target_branch_id !== undefined && !found) throw notFound("target branch");
  const finalize = body.finalize_restore ?? false;
  if (finalize && !found) {
    throw new PlatformError(
      422,
      `the snapshot's source branch ${snapshot.sourceBranchId} no longer exists: name target_branch_id to finalize`,
    );
  }
  const restricted = found && restrictedAction(found, "restore");
  if (restricted) throw new PlatformError(422, restricted);
  const name = body.name ?? body.deprecatedName;
  if (name !== undefined && branchesOfProject(world, snapshot.projectId).some((b) => b.name === name)) {
    throw new PlatformError(409, `branch ${name} already exists`);
  }
  if (finalize && found?.currentState === "init") throw new PlatformError(422, "branch not ready yet");
  const replacedName = finalize && found ? oldName(world, found, undefined) : undefined;
  world.assertUnlocked(snapshot.projectId, found ? [found.id] : []);

  const id = newBranchId();
  const branch: BranchRecord = {
    id,
    projectId: snapshot.projectId,
    name: name ?? id,
    startLsn: snapshot.point.lsn,
    primary: false,
    createdAt: now,
    updatedAt: now,
    currentState: "init",
    stateChangedAt: now,
    protected: false,
    restore: { status: "restored", snapshotId: snapshot.id, targetBranchId: targetId },
  };
  copyCatalogRecords(world, snapshot, branch, now);
  world.addBranch(branch);
  world.data?.branchFromSnapshot(branch, snapshot.id);
  const placed =
    found && replacedName !== undefined ? takePlace(world, branch, found, replacedName, now) : undefined;
  const operations = world.startOperations(
    snapshot.projectId,
    [{ action: "create_branch", branchId: id }, ...(placed?.specs ?? [])],
    now,
  );
  return { branch, endpoints: placed?.endpoints ?? [], operations };
}

/**
 * `finalize_restore`: a branch a snapshot's restore made takes the place of the branch it
 * replaces; that one is renamed (`name`, else `<name> (old)`).
 */
export function finalizeRestore(
  world: World,
  branch: BranchRecord,
  body: { name?: string | undefined },
  now: number,
): OperationRecord[] {
  const restore = branch.restore;
  if (!restore) throw badRequest(`branch ${branch.id} was not created by a snapshot restore`);
  if (restore.status === "finalized")
    throw new PlatformError(422, `the restore of branch ${branch.id} is already finalized`);
  const target = world.branches.get(restore.targetBranchId);
  if (!target)
    throw new PlatformError(
      422,
      `branch ${restore.targetBranchId}, which the restore replaces, no longer exists`,
    );
  const restricted = restrictedAction(target, "restore");
  if (restricted) throw new PlatformError(422, restricted);
  if (branch.currentState === "init" || target.currentState === "init") {
    throw new PlatformError(422, "branch not ready yet");
  }
  const replacedName = oldName(world, target, body.name);
  world.assertUnlocked(branch.projectId, [branch.id, target.id]);
  const { specs } = takePlace(world, branch, target, replacedName, now);
  return specs.length === 0 ? [] : world.startOperations(branch.projectId, specs, now);
}
