// Branches through the platform API: create (from a parent, optionally with
// endpoints), read, rename or protect, set to expire, delete. A new branch is
// `init` until its create_branch operation finishes; endpoints cannot be put
// on it before ("branch not ready yet").
import { currentLsn, resolvePoint, rootStartLsn } from "./branch-history.ts";
import { copyCatalog, databasesOf } from "./catalog.ts";
import { newEndpoint, newEndpointSize } from "./endpoints.ts";
import { PlatformError, badRequest, notFound } from "./errors.ts";
import { checkEndpointType, projectLimits } from "./plans.ts";
import { newBranchId } from "./ids.ts";
import type { BranchRecord, EndpointRecord, OperationRecord } from "./model.ts";
import type { CreateBranchBody, UpdateBranchBody } from "./requests.ts";
import type { OperationSpec, World } from "./world.ts";

export interface BranchChange {
  branch: BranchRecord;
  endpoints: EndpointRecord[];
  operations: OperationRecord[];
}

export function branchesOfProject(world: World, projectId: string): BranchRecord[] {
  return [...world.branches.values()].filter((b) => b.projectId === projectId);
}

export function findBranch(world: World, projectId: string, branchId: string): BranchRecord {
  const branch = world.branches.get(branchId);
  if (!branch || branch.projectId !== projectId) throw notFound("branch");
  return branch;
}

export function createBranch(
  world: World,
  projectId: string,
  body: CreateBranchBody,
  now: number,
): BranchChange {
  const project = world.projects.get(projectId);
  if (!project) throw notFound("project");
  const siblings = branchesOfProject(world, projectId);
  const parentId = body.branch?.parent_id;
  const parent = parentId === undefined ? siblings.find((b) => b.primary) : world.branches.get(parentId);
  if (!parent || parent.projectId !== projectId) throw notFound("parent branch");
  const name = body.branch?.name;
  if (name !== undefined && siblings.some((b) => b.name === name)) {
    throw new PlatformError(409, `branch ${name} already exists`);
  }
  const expiresAt = parseExpiry(body.branch?.expires_at, now);
  const specs = body.endpoints ?? [];
  if (specs.filter((e) => e.type === "read_write").length > 1) {
    throw badRequest("endpoints: a branch can have only one read_write endpoint");
  }
  const ranges = specs.map((e, i) => {
    checkEndpointType(projectLimits(world, projectId), e.type);
    return newEndpointSize(world, project, e, `endpoints[${i}].`);
  });
  // A past point of the parent (its restore window's refusals name the field).
  const point = resolvePoint(
    world,
    parent,
    { timestamp: body.branch?.parent_timestamp, lsn: body.branch?.parent_lsn },
    { timestamp: "branch.parent_timestamp", lsn: "branch.parent_lsn" },
    now,
  );
  // The document: a schema-only branch is a new root branch; `parent_id` only names where its
  // schema comes from.
  const schemaOnly = body.branch?.init_source === "schema-only";

  world.assertUnlocked(projectId, [parent.id]);

  const id = newBranchId();
  const branch: BranchRecord = {
    id,
    projectId,
    name: name ?? id,
    ...(schemaOnly ? { initSource: "schema-only" as const } : { parentId: parent.id }),
    parentPoint: point ?? { at: now, lsn: currentLsn(parent) },
    startLsn: schemaOnly ? rootStartLsn : (point?.lsn ?? currentLsn(parent)),
    primary: false,
    createdAt: now,
    updatedAt: now,
    currentState: "init",
    stateChangedAt: now,
    protected: body.branch?.protected ?? false,
    ...(expiresAt === undefined ? {} : { expiresAt }),
    ...(body.annotation_value === undefined
      ? {}
      : { annotation: { value: body.annotation_value, createdAt: now, updatedAt: now } }),
  };
  world.addBranch(branch);
  copyCatalog(world, parent, branch, now, point?.at);
  world.data?.branchCreated(branch, parent, {
    ...(point === undefined ? {} : { at: point.at }),
    schemaOnly,
    databases: databasesOf(branch).map((d) => d.name),
  });
  const endpoints = specs.map((spec, i) => {
    const range = ranges[i]!;
    const { type, provisioner, settings, suspend_timeout_seconds } = spec;
    const endpoint = newEndpoint(
      project,
      {
        branch_id: id,
        type,
        ...(provisioner === undefined ? {} : { provisioner }),
        ...(settings === undefined ? {} : { settings }),
        ...(suspend_timeout_seconds === undefined ? {} : { suspend_timeout_seconds }),
      },
      range.min,
      range.max,
      now,
      "console",
    );
    world.addEndpoint(endpoint);
    return endpoint;
  });
  // The branch first, then each endpoint's compute; the endpoints show `init` → `active`.
  const chain: OperationSpec[] = [
    { action: "create_branch", branchId: id },
    ...endpoints.map((e) => ({ action: "start_compute" as const, branchId: id, endpointId: e.id })),
  ];
  const operations = world.startOperations(projectId, chain, now);
  for (const endpoint of endpoints) endpoint.pendingState = "active";
  if (expiresAt !== undefined) world.scheduleBranchExpiry(branch);
  return { branch, endpoints, operations };
}

export function updateBranch(
  world: World,
  projectId: string,
  branchId: string,
  body: UpdateBranchBody,
  now: number,
): BranchChange {
  const branch = findBranch(world, projectId, branchId);
  if (body.name !== undefined && body.name !== branch.name) {
    if (branchesOfProject(world, projectId).some((b) => b.name === body.name)) {
      throw new PlatformError(409, `branch ${body.name} already exists`);
    }
    branch.name = body.name;
  }
  if (body.protected !== undefined) branch.protected = body.protected;
  if (body.expires_at === null) delete branch.expiresAt;
  else if (body.expires_at !== undefined) {
    if (branch.primary) throw badRequest("expires_at: the default branch cannot expire");
    branch.expiresAt = parseExpiry(body.expires_at, now)!;
    world.scheduleBranchExpiry(branch);
  }
  branch.updatedAt = now;
  world.changed();
  // Metadata only: nothing to run.
  return { branch, endpoints: [], operations: [] };
}

/**
 * Deletes a branch and its endpoints: a running compute is suspended, then the timeline goes.
 * `expired` is the platform's own deletion at `expires_at`, which ignores protection.
 */
export function deleteBranch(
  world: World,
  branch: BranchRecord,
  now: number,
  { expired }: { expired: boolean } = { expired: false },
): BranchChange {
  if (branch.primary) throw new PlatformError(422, "cannot delete the project's default branch");
  if ([...world.branches.values()].some((b) => b.parentId === branch.id)) {
    throw new PlatformError(422, "cannot delete a branch that has child branches");
  }
  if (branch.protected && !expired) throw new PlatformError(422, "cannot delete a protected branch");
  world.assertUnlocked(branch.projectId, [branch.id]);
  const endpoints = world.endpointsOfBranch(branch.id);
  const chain: OperationSpec[] = [
    ...endpoints
      .filter((e) => e.currentState === "active")
      .map((e) => ({ action: "suspend_compute" as const, branchId: branch.id, endpointId: e.id })),
    { action: "delete_timeline", branchId: branch.id },
  ];
  const operations = world.startOperations(branch.projectId, chain, now);
  for (const endpoint of endpoints) world.removeEndpoint(endpoint);
  world.removeBranch(branch);
  return { branch, endpoints, operations };
}

function parseExpiry(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const at = Date.parse(value);
  if (at <= now) throw badRequest("expires_at: must be in the future");
  return at;
}
