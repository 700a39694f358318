// Projects and branches: the seeded world, the admin's additions, and the
// project listing with its id cursor.
import { randomUUID } from "node:crypto";
import { copyCatalog, seedCatalog } from "./catalog.ts";
import { newEndpoint } from "./endpoints.ts";
import { PlatformError, notFound } from "./errors.ts";
import { newApiKeyValue, newBranchId, newOrganizationId, newProjectId } from "./ids.ts";
import type { AccountRecord, BranchRecord, EndpointRecord, OperationRecord, ProjectRecord } from "./model.ts";
import type { BranchSeed, ProjectSeed, Seed } from "./seed.ts";
import { World, type WorldOptions } from "./world.ts";

/** `aws-us-east-2` → `us-east-2.aws.neon.tech`, the platform's proxy host form. */
function regionHost(regionId: string): { platformId: string; proxyHost: string } {
  const match = /^(aws|azure|gcp)-(.+)$/.exec(regionId);
  if (!match?.[1] || !match[2]) return { platformId: "aws", proxyHost: `${regionId}.neon.tech` };
  return { platformId: match[1], proxyHost: `${match[2]}.${match[1]}.neon.tech` };
}

/** A world holding what the seed describes; the bootstrap keys' values (by account id) are returned here only. */
export function seedWorld(
  options: WorldOptions,
  seed: Seed,
): { world: World; bootstrapKey: string; bootstrapKeys: Map<string, string> } {
  const now = options.clock.now();
  const world = new World(options);
  const bootstrapKeys = new Map<string, string>();
  for (const accountSeed of [seed, ...seed.accounts]) {
    const { account: info } = accountSeed;
    const account: AccountRecord = {
      id: info.id ?? (info.kind === "user" ? randomUUID() : newOrganizationId()),
      kind: info.kind,
      name: info.name,
      image: info.image,
      email: info.email,
      createdAt: now,
    };
    world.addAccount(account);
    const value = accountSeed.bootstrap_key.key ?? newApiKeyValue();
    world.addApiKey(account.id, accountSeed.bootstrap_key.name, value, now);
    bootstrapKeys.set(account.id, value);
    for (const project of accountSeed.projects) addProject(world, account.id, project, now, { seeded: true });
  }
  world.startAvailabilityChecks();
  const bootstrapKey = bootstrapKeys.values().next().value ?? "";
  return { world, bootstrapKey, bootstrapKeys };
}

export interface NewProject {
  project: ProjectRecord;
  branches: BranchRecord[];
  endpoint: EndpointRecord;
  operations: OperationRecord[];
}

/**
 * Adds a project with its primary branch and that branch's read-write
 * endpoint. A seeded project is history (endpoint idle, no operations); one
 * added later runs create_timeline then start_compute, like a new project.
 */
export function addProject(
  world: World,
  ownerId: string,
  seed: ProjectSeed,
  now: number,
  { seeded }: { seeded: boolean },
): NewProject {
  const id = seed.id ?? newProjectId();
  if (world.projects.has(id)) throw new PlatformError(409, `project ${id} already exists`);
  const owner = world.account(ownerId);
  // An organization's projects are its own; a user's may name an organization it belongs to.
  const orgId = owner.kind === "organization" ? owner.id : seed.org_id;
  const project: ProjectRecord = {
    id,
    ownerId,
    name: seed.name,
    regionId: seed.region_id,
    ...regionHost(seed.region_id),
    provisioner: seed.provisioner,
    pgVersion: seed.pg_version,
    ...(orgId === undefined ? {} : { orgId }),
    branchLogicalSizeLimitMiB: 3072,
    storePasswords: seed.store_passwords,
    createdAt: now,
    updatedAt: now,
  };
  world.addProject(project);
  const primary: BranchRecord = {
    id: newBranchId(),
    projectId: id,
    name: seed.primary_branch,
    primary: true,
    createdAt: now,
  };
  world.addBranch(primary);
  seedCatalog(world, primary, seed.role_name, seed.database_name, now);
  const branches = [primary];
  for (const branch of seed.branches)
    branches.push(addBranch(world, id, branch, now, { seeded: true }).branch);

  const endpoint = newEndpoint(project, { branch_id: primary.id, type: "read_write" }, 1, 1, now, "console");
  world.addEndpoint(endpoint);
  if (seeded) {
    endpoint.currentState = "idle";
    return { project, branches, endpoint, operations: [] };
  }
  const operations = world.startOperations(
    id,
    [
      { action: "create_timeline", branchId: primary.id },
      { action: "start_compute", branchId: primary.id, endpointId: endpoint.id },
    ],
    now,
    "active",
  );
  return { project, branches, endpoint, operations };
}

/** Adds a branch (without endpoints); `parent` names the parent by name or id, default the primary. */
export function addBranch(
  world: World,
  projectId: string,
  seed: BranchSeed,
  now: number,
  { seeded }: { seeded: boolean },
): { branch: BranchRecord; operations: OperationRecord[] } {
  if (!world.projects.has(projectId)) throw notFound("project");
  const siblings = [...world.branches.values()].filter((b) => b.projectId === projectId);
  const parent = siblings.find((b) =>
    seed.parent === undefined ? b.primary : b.id === seed.parent || b.name === seed.parent,
  );
  if (!parent) throw notFound("parent branch");
  const id = seed.id ?? newBranchId();
  if (world.branches.has(id)) throw new PlatformError(409, `branch ${id} already exists`);
  const branch: BranchRecord = {
    id,
    projectId,
    name: seed.name,
    parentId: parent.id,
    primary: false,
    createdAt: now,
    ...(seeded ? {} : { currentState: "init" as const, stateChangedAt: now, updatedAt: now }),
  };
  world.addBranch(branch);
  copyCatalog(world, parent, branch, now);
  world.data?.branchCreated(branch, parent);
  const operations = seeded
    ? []
    : world.startOperations(projectId, [{ action: "create_branch", branchId: id }], now);
  return { branch, operations };
}

export interface ProjectPage {
  projects: ProjectRecord[];
  /** The last project id of the page, the cursor of the next one. */
  cursor?: string;
}

/** An account's projects in creation order; `cursor` is the last project id of the previous page. */
export function listProjects(
  world: World,
  ownerId: string,
  query: {
    limit: number;
    cursor?: string | undefined;
    search?: string | undefined;
    org_id?: string | undefined;
  },
): ProjectPage {
  let all = [...world.projects.values()].filter((p) => p.ownerId === ownerId);
  if (query.org_id !== undefined) all = all.filter((p) => p.orgId === query.org_id);
  if (query.search !== undefined) {
    const needle = query.search.toLowerCase();
    all = all.filter((p) => p.id.includes(needle) || p.name.toLowerCase().includes(needle));
  }
  const start = query.cursor === undefined ? 0 : all.findIndex((p) => p.id === query.cursor) + 1;
  const projects = all.slice(start, start + query.limit);
  const last = projects.at(-1);
  return last === undefined ? { projects } : { projects, cursor: last.id };
}
