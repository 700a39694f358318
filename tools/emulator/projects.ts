// Projects: the seeded world, a new project's records (seeded, added by the admin API, or created
// through the platform API), the organizations a key may name, and the project listing with its
// id cursor.
import { randomUUID } from "node:crypto";
import { listsProject, type Caller } from "./access.ts";
import { currentLsn } from "./branch-history.ts";
import { copyCatalog, databasesOf, seedCatalog } from "./catalog.ts";
import { checkComputeRange } from "./compute-units.ts";
import { newEndpoint } from "./endpoints.ts";
import { PlatformError, badRequest, notFound } from "./errors.ts";
import { newApiKeyValue, newBranchId, newOrganizationId, newProjectId } from "./ids.ts";
import type {
  AccountRecord,
  BranchRecord,
  DefaultEndpointSettings,
  DeletedProjectRecord,
  EndpointRecord,
  OperationRecord,
  PlanLimits,
  ProjectRecord,
  ProjectSettings,
} from "./model.ts";
import { checkPlanCompute, defaultHistoryRetention, limitsOf, toPlanLimits } from "./plans.ts";
import { regionHost } from "./regions.ts";
import type { DefaultEndpointSettingsBody, ListProjectsQuery } from "./requests.ts";
import type { AccountSeed, BranchSeed, ProjectSeed, Seed } from "./seed.ts";
import { World, type WorldOptions } from "./world.ts";

/** A world holding what the seed describes; the bootstrap keys' values (by account id) are returned here only. */
export function seedWorld(
  options: WorldOptions,
  seed: Seed,
): { world: World; bootstrapKey: string; bootstrapKeys: Map<string, string> } {
  const now = options.clock.now();
  const world = new World(options);
  const bootstrapKeys = new Map<string, string>();
  for (const accountSeed of [seed, ...seed.accounts]) {
    const { account, key } = seedAccount(world, accountSeed, now);
    bootstrapKeys.set(account.id, key);
  }
  world.startAvailabilityChecks();
  const bootstrapKey = bootstrapKeys.values().next().value ?? "";
  return { world, bootstrapKey, bootstrapKeys };
}

/**
 * Adds an account as a seed describes it (a seed's, or the admin API's), with its bootstrap key
 * and its projects; the key's value is returned here only.
 */
export function seedAccount(
  world: World,
  accountSeed: AccountSeed,
  now: number,
): { account: AccountRecord; key: string } {
  const { account: info } = accountSeed;
  const account: AccountRecord = {
    id: info.id ?? (info.kind === "user" ? randomUUID() : newOrganizationId()),
    kind: info.kind,
    name: info.name,
    image: info.image,
    email: info.email,
    createdAt: now,
    ...(accountSeed.limits === undefined ? {} : { limits: toPlanLimits(accountSeed.limits) }),
    ...(info.organizations === undefined ? {} : { organizations: info.organizations }),
  };
  world.addAccount(account);
  const key = accountSeed.bootstrap_key.key ?? newApiKeyValue();
  world.addApiKey(account.id, accountSeed.bootstrap_key.name, key, now);
  for (const project of accountSeed.projects) addProject(world, account.id, project, now, { seeded: true });
  return { account, key };
}

/** What a new project is: the fields of its record and of its default branch, role and database. */
export interface ProjectSpec {
  id: string;
  name: string;
  regionId: string;
  pgVersion: number;
  orgId?: string | undefined;
  provisioner: string;
  storePasswords: boolean;
  historyRetentionSeconds: number;
  settings: ProjectSettings;
  defaultEndpointSettings: DefaultEndpointSettings;
  branchName: string;
  roleName: string;
  databaseName: string;
  annotation?: Record<string, string> | undefined;
}

export interface NewProject {
  project: ProjectRecord;
  /** The default branch first. */
  branches: BranchRecord[];
  /** The default branch's read-write endpoint. */
  endpoint: EndpointRecord;
  operations: OperationRecord[];
}

/**
 * A project's records: the project, its default branch with the owner role and database, and that
 * branch's read-write endpoint (with the project's default endpoint settings). The branch is
 * `init` when `creating` (its create_timeline still to run), ready otherwise.
 */
export function buildProject(
  world: World,
  ownerId: string,
  spec: ProjectSpec,
  now: number,
  { creating }: { creating: boolean },
): { project: ProjectRecord; primary: BranchRecord; endpoint: EndpointRecord } {
  if (world.projects.has(spec.id) || world.deletedProjects.has(spec.id)) {
    throw new PlatformError(409, `project ${spec.id} already exists`);
  }
  const owner = world.account(ownerId);
  // An organization's projects are its own; a user's may name an organization it belongs to.
  const orgId = owner.kind === "organization" ? owner.id : spec.orgId;
  const project: ProjectRecord = {
    id: spec.id,
    ownerId,
    name: spec.name,
    regionId: spec.regionId,
    ...regionHost(spec.regionId),
    provisioner: spec.provisioner,
    pgVersion: spec.pgVersion,
    ...(orgId === undefined ? {} : { orgId }),
    branchLogicalSizeLimitMiB: 3072,
    storePasswords: spec.storePasswords,
    historyRetentionSeconds: spec.historyRetentionSeconds,
    settings: spec.settings,
    defaultEndpointSettings: spec.defaultEndpointSettings,
    ...(spec.settings.hipaa === true ? { hipaaEnabledAt: now } : {}),
    createdAt: now,
    updatedAt: now,
  };
  world.addProject(project);
  const primary: BranchRecord = {
    id: newBranchId(),
    projectId: project.id,
    name: spec.branchName,
    primary: true,
    createdAt: now,
    ...(creating ? { currentState: "init" as const, stateChangedAt: now, updatedAt: now } : {}),
    ...(spec.annotation === undefined
      ? {}
      : { annotation: { value: spec.annotation, createdAt: now, updatedAt: now } }),
  };
  world.addBranch(primary);
  seedCatalog(world, primary, spec.roleName, spec.databaseName, now);
  const defaults = spec.defaultEndpointSettings;
  const endpoint = newEndpoint(
    project,
    {
      branch_id: primary.id,
      type: "read_write",
      suspend_timeout_seconds: defaults.suspend_timeout_seconds,
    },
    defaults.autoscaling_limit_min_cu,
    defaults.autoscaling_limit_max_cu,
    now,
    "console",
  );
  world.addEndpoint(endpoint);
  return { project, primary, endpoint };
}

/**
 * Default endpoint settings from what a request or seed gives: one limit alone makes a fixed size;
 * none, 1 CU fixed (the contract's default), or the plan's largest size where that is smaller.
 */
export function resolveDefaultEndpointSettings(
  given: DefaultEndpointSettingsBody | undefined,
  limits: PlanLimits,
  base?: DefaultEndpointSettings,
): DefaultEndpointSettings {
  const fallback = Math.min(1, limits.maxComputeUnits);
  const givenMin = given?.autoscaling_limit_min_cu;
  const givenMax = given?.autoscaling_limit_max_cu;
  const min = givenMin ?? (base ? base.autoscaling_limit_min_cu : (givenMax ?? fallback));
  const max = givenMax ?? (base ? base.autoscaling_limit_max_cu : (givenMin ?? fallback));
  const prefix = "default_endpoint_settings.";
  checkComputeRange(min, max, prefix);
  checkPlanCompute(limits, min, max, prefix);
  const pgSettings = given?.pg_settings ?? base?.pg_settings;
  return {
    autoscaling_limit_min_cu: min,
    autoscaling_limit_max_cu: max,
    suspend_timeout_seconds: given?.suspend_timeout_seconds ?? base?.suspend_timeout_seconds ?? 0,
    ...(pgSettings === undefined ? {} : { pg_settings: pgSettings }),
  };
}

/**
 * Adds a project from a seed (or the admin API) with its primary branch and that branch's
 * read-write endpoint. A seeded project is history (endpoint idle, no operations); one added
 * later runs create_timeline then start_compute, like a new project.
 */
export function addProject(
  world: World,
  ownerId: string,
  seed: ProjectSeed,
  now: number,
  { seeded }: { seeded: boolean },
): NewProject {
  const limits = limitsOf(world.account(ownerId));
  const id = seed.id ?? newProjectId();
  const { project, primary, endpoint } = buildProject(
    world,
    ownerId,
    {
      id,
      name: seed.name,
      regionId: seed.region_id,
      pgVersion: seed.pg_version,
      orgId: seed.org_id,
      provisioner: seed.provisioner,
      storePasswords: seed.store_passwords,
      historyRetentionSeconds: seed.history_retention_seconds ?? defaultHistoryRetention(limits),
      settings: seed.settings ?? {},
      defaultEndpointSettings: resolveDefaultEndpointSettings(seed.default_endpoint_settings, limits),
      branchName: seed.primary_branch,
      roleName: seed.role_name,
      databaseName: seed.database_name,
    },
    now,
    { creating: false },
  );
  const branches = [primary];
  for (const branch of seed.branches)
    branches.push(addBranch(world, id, branch, now, { seeded: true }).branch);
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
    parentPoint: { at: now, lsn: currentLsn(parent) },
    startLsn: currentLsn(parent),
    primary: false,
    createdAt: now,
    ...(seeded ? {} : { currentState: "init" as const, stateChangedAt: now, updatedAt: now }),
    ...(seed.annotation_value === undefined
      ? {}
      : { annotation: { value: seed.annotation_value, createdAt: now, updatedAt: now } }),
  };
  world.addBranch(branch);
  copyCatalog(world, parent, branch, now);
  world.data?.branchCreated(branch, parent, { databases: databasesOf(branch).map((d) => d.name) });
  const operations = seeded
    ? []
    : world.startOperations(projectId, [{ action: "create_branch", branchId: id }], now);
  return { branch, operations };
}

/** The organizations a key of this account may name: its own (an organization), or a user's. */
export function organizationsOf(world: World, account: AccountRecord): { id: string; name: string }[] {
  if (account.kind === "organization") return [{ id: account.id, name: account.name }];
  const found = new Map((account.organizations ?? []).map((o) => [o.id, o.name]));
  for (const p of world.projects.values()) {
    if (p.ownerId === account.id && p.orgId !== undefined && !found.has(p.orgId)) found.set(p.orgId, p.orgId);
  }
  return [...found].map(([id, name]) => ({ id, name }));
}

/**
 * The organization a request to list or create projects acts in. An organization's key implies
 * its own; a user's key must name one of its organizations when it has any (`required`), as the
 * platform answers a personal key without `org_id` "org_id is required". Another organization
 * is as unknown as one that does not exist (404).
 */
export function organizationOf(
  world: World,
  account: AccountRecord,
  orgId: string | undefined,
  { required }: { required: boolean },
): string | undefined {
  const organizations = organizationsOf(world, account);
  if (orgId !== undefined) {
    if (!organizations.some((o) => o.id === orgId)) throw notFound(`organization ${orgId}`);
    return orgId;
  }
  if (account.kind === "organization") return account.id;
  if (required && organizations.length > 0) {
    throw badRequest(
      `org_id is required: the API key's user belongs to organizations (${organizations.map((o) => o.id).join(", ")})`,
    );
  }
  return undefined;
}

export interface ProjectPage {
  projects: { project: ProjectRecord; deleted?: DeletedProjectRecord }[];
  /** The last project id of the page, the cursor of the next one. */
  cursor?: string;
}

/**
 * The projects a caller lists (access.ts `listsProject`), a page in id order. `recoverable` lists
 * the deleted ones within their recovery window instead.
 */
export function listProjects(
  world: World,
  caller: Caller,
  query: ListProjectsQuery,
  { orgIdRequired }: { orgIdRequired: boolean },
): ProjectPage {
  const orgId = organizationOf(world, caller.account, query.org_id, { required: orgIdRequired });
  const all =
    query.recoverable === "true"
      ? [...world.deletedProjects.values()].map((deleted) => ({ project: deleted.project, deleted }))
      : [...world.projects.values()].map((project) => ({ project }));
  return projectPage(
    all.filter(({ project }) => listsProject(caller, project, orgId)),
    query,
  );
}

/**
 * One page of projects in id order, the cursor being the last project id of the previous page (a
 * page starts after it, even when that project is gone since), after a `search` on name or id.
 */
export function projectPage<T extends { project: ProjectRecord }>(
  all: T[],
  query: { limit: number; cursor?: string | undefined; search?: string | undefined },
): { projects: T[]; cursor?: string } {
  const needle = query.search?.toLowerCase();
  const matching = all
    .filter(
      ({ project: p }) =>
        (needle === undefined || p.id.includes(needle) || p.name.toLowerCase().includes(needle)) &&
        (query.cursor === undefined || p.id > query.cursor),
    )
    .sort((a, b) => (a.project.id < b.project.id ? -1 : 1));
  const projects = matching.slice(0, query.limit);
  const last = projects.at(-1);
  return last === undefined ? { projects } : { projects, cursor: last.project.id };
}
