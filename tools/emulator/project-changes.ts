// Projects through the platform API: create (a default branch with its owner role, database and
// read-write endpoint), change the name, settings, default endpoint settings and history
// retention, delete (recoverable for 7 days) and recover. Each is refused as the platform
// refuses it: a malformed field (400 naming it), a plan's limit, a one-way setting turned back,
// a field fixed at creation, the project's lock (423).
import { projectOwner } from "./access.ts";
import { defaultDatabaseName } from "./catalog.ts";
import { checkDatabaseName } from "./databases.ts";
import { PlatformError, badRequest, notFound } from "./errors.ts";
import { newProjectId } from "./ids.ts";
import type { AccountRecord, DeletedProjectRecord, OperationRecord, ProjectRecord } from "./model.ts";
import {
  checkHistoryRetention,
  checkProjectCount,
  defaultHistoryRetention,
  limitsOf,
  projectLimits,
} from "./plans.ts";
import { buildProject, organizationOf, resolveDefaultEndpointSettings, type NewProject } from "./projects.ts";
import { checkRegion, defaultRegionId } from "./regions.ts";
import type { CreateProjectBody, ProjectSettingsBody, UpdateProjectBody } from "./requests.ts";
import { checkRoleName } from "./roles.ts";
import { defaultEndpointSettingsOf, historyRetentionOf } from "./views.ts";
import type { OperationSpec, World } from "./world.ts";

/** How long a deleted project can be recovered (the document: "within 7 days"). */
export const projectRecoveryMs = 7 * 24 * 3600 * 1000;

/**
 * `POST /projects`: the project and its default branch, role, database and read-write endpoint;
 * `create_timeline` then `start_compute`, which hold the new project's lock. The default branch
 * is `init` until its timeline exists.
 */
export function createProject(
  world: World,
  account: AccountRecord,
  body: CreateProjectBody,
  now: number,
  { orgIdRequired }: { orgIdRequired: boolean },
): NewProject {
  // A member creating in an organization that is an account of the world creates the
  // organization's project: its plan's limits apply, and its keys see it (access.ts).
  const owner = projectOwner(world, account, body.org_id);
  const limits = limitsOf(owner);
  const regionId = body.region_id ?? defaultRegionId;
  checkRegion(regionId);
  if (body.history_retention_seconds !== undefined) {
    checkHistoryRetention(limits, body.history_retention_seconds);
  }
  // The document: the role defaults to `{database_name}_owner`, the database to `neondb`.
  const databaseName = body.branch?.database_name ?? defaultDatabaseName;
  const roleName = body.branch?.role_name ?? `${databaseName}_owner`;
  checkDatabaseName("project.branch.database_name", databaseName);
  checkRoleName("project.branch.role_name", roleName);
  const given = body.default_endpoint_settings;
  const defaultEndpointSettings = resolveDefaultEndpointSettings(
    {
      ...given,
      // The deprecated top-level limits, where default_endpoint_settings does not give them.
      autoscaling_limit_min_cu: given?.autoscaling_limit_min_cu ?? body.autoscaling_limit_min_cu,
      autoscaling_limit_max_cu: given?.autoscaling_limit_max_cu ?? body.autoscaling_limit_max_cu,
    },
    limits,
  );
  const orgId = organizationOf(world, account, body.org_id, { required: orgIdRequired });
  checkProjectCount(world, owner);

  const id = newProjectId();
  const { project, primary, endpoint } = buildProject(
    world,
    owner.id,
    {
      id,
      name: body.name ?? id,
      regionId,
      pgVersion: body.pg_version ?? 17,
      orgId,
      provisioner: body.provisioner ?? "k8s-neonvm",
      storePasswords: body.store_passwords ?? true,
      historyRetentionSeconds: body.history_retention_seconds ?? defaultHistoryRetention(limits),
      settings: body.settings ?? {},
      defaultEndpointSettings,
      branchName: body.branch?.name ?? "main",
      roleName,
      databaseName,
      annotation: body.branch?.annotations,
    },
    now,
    { creating: true },
  );
  const operations = world.startOperations(
    id,
    [
      { action: "create_timeline", branchId: primary.id },
      { action: "start_compute", branchId: primary.id, endpointId: endpoint.id },
    ],
    now,
  );
  endpoint.pendingState = "active";
  return { project, branches: [primary], endpoint, operations };
}

/** Fields of a project create that a project update does not take: fixed at creation. */
const fixedAtCreation = [
  "region_id",
  "pg_version",
  "org_id",
  "store_passwords",
  "branch",
  "provisioner",
  "autoscaling_limit_min_cu",
  "autoscaling_limit_max_cu",
] as const;

/** Settings that cannot be turned off once on (the document says so of logical replication). */
const oneWaySettings = ["enable_logical_replication", "hipaa"] as const;

/**
 * `PATCH /projects/{id}`: only the name, settings, default endpoint settings and history
 * retention. A settings key or a default endpoint setting given replaces that one value; what is
 * not given stays. A retention change runs `apply_storage_config`; turning logical replication on
 * suspends the active endpoints. Refused while the project's lock is held, as any change.
 */
export function updateProject(
  world: World,
  project: ProjectRecord,
  raw: unknown,
  body: UpdateProjectBody,
  now: number,
): { project: ProjectRecord; operations: OperationRecord[] } {
  const given = (raw as { project?: Record<string, unknown> }).project ?? {};
  const fixed = fixedAtCreation.find((field) => field in given);
  if (fixed !== undefined) {
    throw badRequest(
      `project.${fixed}: cannot be changed; a project's region, Postgres version, organization, password storage and default branch are fixed at its creation`,
    );
  }
  const limits = projectLimits(world, project.id);
  if (body.history_retention_seconds !== undefined) {
    checkHistoryRetention(limits, body.history_retention_seconds);
  }
  const settings = mergeSettings(project, body.settings);
  const defaults =
    body.default_endpoint_settings === undefined
      ? undefined
      : resolveDefaultEndpointSettings(
          body.default_endpoint_settings,
          limits,
          defaultEndpointSettingsOf(project),
        );
  world.assertUnlocked(project.id, []);

  const retentionChanged =
    body.history_retention_seconds !== undefined &&
    body.history_retention_seconds !== historyRetentionOf(project);
  const replicationTurnedOn =
    settings.enable_logical_replication === true && project.settings?.enable_logical_replication !== true;
  if (body.name !== undefined) project.name = body.name;
  if (settings.hipaa === true && project.hipaaEnabledAt === undefined) project.hipaaEnabledAt = now;
  project.settings = settings;
  if (defaults !== undefined) project.defaultEndpointSettings = defaults;
  if (body.history_retention_seconds !== undefined)
    project.historyRetentionSeconds = body.history_retention_seconds;
  project.updatedAt = now;
  world.changed();

  const chain: OperationSpec[] = retentionChanged ? [{ action: "apply_storage_config" }] : [];
  // "Sets wal_level=logical for all compute endpoints in this project. All active endpoints will be suspended."
  const suspended = replicationTurnedOn
    ? [...(world.endpointsByProject.get(project.id)?.values() ?? [])].filter(
        (e) => e.currentState === "active",
      )
    : [];
  for (const e of suspended)
    chain.push({ action: "suspend_compute", branchId: e.branchId, endpointId: e.id });
  const operations = chain.length === 0 ? [] : world.startOperations(project.id, chain, now);
  for (const e of suspended) e.pendingState = "idle";
  return { project, operations };
}

function mergeSettings(project: ProjectRecord, given: ProjectSettingsBody | undefined) {
  const current = project.settings ?? {};
  if (given === undefined) return current;
  for (const key of oneWaySettings) {
    if (current[key] === true && given[key] === false) {
      throw new PlatformError(
        422,
        `settings.${key}: cannot be turned off once enabled${key === "enable_logical_replication" ? " (the project's computes run with wal_level=logical from then on)" : ""}`,
      );
    }
  }
  return { ...current, ...given };
}

/**
 * `DELETE /projects/{id}`: the project and every branch, endpoint, role and database in it go at
 * once (`delete_tenant`); every route of it answers 404 afterwards. Recoverable for 7 days.
 * Refused while the project's lock is held, as any change.
 */
export function deleteProject(world: World, project: ProjectRecord, now: number): DeletedProjectRecord {
  world.assertUnlocked(project.id, []);
  return world.deleteProject(project.id, now, now + projectRecoveryMs);
}

/**
 * `POST /projects/{id}/recover`: a deleted project back, within its window and its owner's plan's
 * count. Who may recover it (an admin of it) is decided before the route runs (access.ts).
 */
export function recoverProject(world: World, projectId: string, now: number): DeletedProjectRecord {
  const deleted = world.deletedProjects.get(projectId);
  if (!deleted) throw notFound("project");
  checkProjectCount(world, world.account(deleted.project.ownerId));
  return world.recoverProject(projectId, now);
}
