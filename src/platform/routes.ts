/**
 * Every platform route the operator uses, each once: its method, its path template, the shape of
 * its answer, and what a success tells the project's state (project.ts). A path is built from the
 * template and the ids (`pathOf`), and the template is the route's name in logs, metrics and
 * errors, so a URL is never written twice.
 *
 * A mutation of a project route (`/projects/{project_id}` and below) takes the project's turn in
 * its mutation gate: the platform runs one change of a project at a time (platform-facts.md).
 */
import type { z } from "zod";
import {
  orgApiKeyCreatedWire,
  orgApiKeyRevokedWire,
  orgApiKeysWire,
  projectPermissionWire,
  projectPermissionsWire,
} from "./access-schemas.ts";
import type { Branch } from "./branch-schemas.ts";
import { branchMutationWire, branchesResponseWire } from "./branch-schemas.ts";
import {
  branchRestoreWire,
  databaseMutationWire,
  databasesResponseWire,
  roleMutationWire,
  rolesResponseWire,
} from "./branch-content-schemas.ts";
import {
  projectCreatedWire,
  projectDeletedWire,
  projectMutationWire,
  projectResponseWire,
  projectsPageWire,
} from "./project-schemas.ts";
import { connectionUriWire, passwordResetWire, rolePasswordWire } from "./role-schemas.ts";
import {
  anonymizationStartedWire,
  anonymizedStatusWire,
  maskingRulesChangedWire,
  maskingRulesWire,
} from "./anonymized-schemas.ts";
import {
  backupScheduleSetWire,
  backupScheduleWire,
  snapshotCreatedWire,
  snapshotOperationsWire,
  snapshotsResponseWire,
  snapshotUpdatedWire,
} from "./snapshot-schemas.ts";
import {
  apiKeyCreatedWire,
  apiKeyRevokedWire,
  apiKeysWire,
  authDetailsWire,
  type Endpoint,
  endpointMutationWire,
  endpointResponseWire,
  endpointsResponseWire,
  type Operation,
  operationResponseWire,
  operationsPageWire,
} from "./schemas.ts";

export type Method = "GET" | "POST" | "PATCH" | "PUT" | "DELETE";

/** The lists a project keeps of its objects (snapshot.ts). */
export type ProjectList = "endpoints" | "branches";

/** Which object of the project's lists an answer shows as it now is. */
export type Shown<T> =
  NonNullable<T> extends { branch: Branch }
    ? "branch"
    : NonNullable<T> extends { endpoint: Endpoint }
      ? "endpoint"
      : never;

export interface Route<P extends string = string, T = unknown> {
  method: Method;
  /** The path template, e.g. "/projects/{project_id}/endpoints"; the route's name everywhere. */
  path: P;
  /** The answer's shape (validated, then camelCase); an optional schema accepts an empty body. */
  schema: z.ZodType<T>;
  /**
   * The object the answer shows as it now is, recorded in the project's list of such objects (a
   * DELETE removes it; a branch's answer also shows the endpoints it carries).
   */
  shows?: Shown<T>;
  /** Lists of the project the change alters beyond what its answer shows: the next reader lists them. */
  alters?: readonly ProjectList[];
}

/** The names in a path template: "/projects/{project_id}/x/{x_id}" → "project_id" | "x_id". */
export type PathIds<P extends string> = P extends `${string}{${infer Name}}${infer Rest}`
  ? Name | PathIds<Rest>
  : never;

export type Ids<P extends string> = Record<PathIds<P>, string | number>;

/** What a project change answers: the operations it started (none for a 204). */
export type ChangeAnswer = { operations: Operation[] } | undefined;

const route = <const P extends string, T>(r: Route<P, T>): Route<P, T> => r;

/** The path of a route for these ids. Ids never contain "/", but encoding keeps a bad one from changing the route. */
export function pathOf<P extends string>(template: P, ids: Ids<P>): string {
  const values = ids as Record<string, string | number | undefined>;
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`${template}: no value for {${name}}`);
    return encodeURIComponent(String(value));
  });
}

/**
 * Whether a route changes a project (the project itself or anything in it): it then takes the
 * project's turn and tells its state.
 */
export const changesProject = (r: Route): boolean =>
  r.method !== "GET" && /^\/projects\/\{project_id\}(\/|$)/.test(r.path);

export const routes = {
  // The account: who a key is, and its keys.
  authDetails: route({ method: "GET", path: "/auth", schema: authDetailsWire }),
  listApiKeys: route({ method: "GET", path: "/api_keys", schema: apiKeysWire }),
  createApiKey: route({ method: "POST", path: "/api_keys", schema: apiKeyCreatedWire }),
  revokeApiKey: route({ method: "DELETE", path: "/api_keys/{key_id}", schema: apiKeyRevokedWire }),

  // Projects: a create is the account's (no project's turn yet); a change or deletion of a project
  // takes its turn. A project's deletion takes everything in it.
  listProjects: route({ method: "GET", path: "/projects", schema: projectsPageWire }),
  createProject: route({ method: "POST", path: "/projects", schema: projectCreatedWire }),
  getProject: route({ method: "GET", path: "/projects/{project_id}", schema: projectResponseWire }),
  // Turning logical replication on suspends the project's active endpoints.
  updateProject: route({
    method: "PATCH",
    path: "/projects/{project_id}",
    schema: projectMutationWire,
    alters: ["endpoints"],
  }),
  deleteProject: route({
    method: "DELETE",
    path: "/projects/{project_id}",
    schema: projectDeletedWire,
    alters: ["endpoints", "branches"],
  }),

  // A project's compute endpoints.
  listEndpoints: route({
    method: "GET",
    path: "/projects/{project_id}/endpoints",
    schema: endpointsResponseWire,
  }),
  getEndpoint: route({
    method: "GET",
    path: "/projects/{project_id}/endpoints/{endpoint_id}",
    schema: endpointResponseWire,
  }),
  createEndpoint: route({
    method: "POST",
    path: "/projects/{project_id}/endpoints",
    schema: endpointMutationWire,
    shows: "endpoint",
  }),
  updateEndpoint: route({
    method: "PATCH",
    path: "/projects/{project_id}/endpoints/{endpoint_id}",
    schema: endpointMutationWire,
    shows: "endpoint",
  }),
  // 204 without a body when the endpoint is already gone.
  deleteEndpoint: route({
    method: "DELETE",
    path: "/projects/{project_id}/endpoints/{endpoint_id}",
    schema: endpointMutationWire.optional(),
    shows: "endpoint",
  }),
  startEndpoint: route({
    method: "POST",
    path: "/projects/{project_id}/endpoints/{endpoint_id}/start",
    schema: endpointMutationWire,
    shows: "endpoint",
  }),
  suspendEndpoint: route({
    method: "POST",
    path: "/projects/{project_id}/endpoints/{endpoint_id}/suspend",
    schema: endpointMutationWire,
    shows: "endpoint",
  }),
  restartEndpoint: route({
    method: "POST",
    path: "/projects/{project_id}/endpoints/{endpoint_id}/restart",
    schema: endpointMutationWire,
    shows: "endpoint",
  }),

  // A project's operations.
  listOperations: route({
    method: "GET",
    path: "/projects/{project_id}/operations",
    schema: operationsPageWire,
  }),
  getOperation: route({
    method: "GET",
    path: "/projects/{project_id}/operations/{operation_id}",
    schema: operationResponseWire,
  }),

  // A project's branches: `create_branch` holds the project's lock like an endpoint's change.
  listBranches: route({
    method: "GET",
    path: "/projects/{project_id}/branches",
    schema: branchesResponseWire,
  }),
  createBranch: route({
    method: "POST",
    path: "/projects/{project_id}/branches",
    schema: branchMutationWire,
    shows: "branch",
  }),
  updateBranch: route({
    method: "PATCH",
    path: "/projects/{project_id}/branches/{branch_id}",
    schema: branchMutationWire,
    shows: "branch",
  }),
  // 204 without a body when the branch is already gone; its endpoints go with it.
  deleteBranch: route({
    method: "DELETE",
    path: "/projects/{project_id}/branches/{branch_id}",
    schema: branchMutationWire.optional(),
    shows: "branch",
    alters: ["endpoints"],
  }),
  // The branch's endpoints restart with it.
  restoreBranch: route({
    method: "POST",
    path: "/projects/{project_id}/branches/{branch_id}/restore",
    schema: branchRestoreWire,
    shows: "branch",
    alters: ["endpoints"],
  }),

  // Anonymized branches: a branch whose data the platform masks by its rules. The create is a
  // branch's create (`create_branch`, and the read-write endpoint the platform gives it); a rules
  // change or a run starts no operation, and the run's state is the branch's `anonymized_status`.
  createAnonymizedBranch: route({
    method: "POST",
    path: "/projects/{project_id}/branch_anonymized",
    schema: branchMutationWire,
    shows: "branch",
  }),
  getMaskingRules: route({
    method: "GET",
    path: "/projects/{project_id}/branches/{branch_id}/masking_rules",
    schema: maskingRulesWire,
  }),
  updateMaskingRules: route({
    method: "PATCH",
    path: "/projects/{project_id}/branches/{branch_id}/masking_rules",
    schema: maskingRulesChangedWire,
  }),
  anonymize: route({
    method: "POST",
    path: "/projects/{project_id}/branches/{branch_id}/anonymize",
    schema: anonymizationStartedWire,
  }),
  anonymizedStatus: route({
    method: "GET",
    path: "/projects/{project_id}/branches/{branch_id}/anonymized_status",
    schema: anonymizedStatusWire,
  }),

  // Snapshots: a branch's data kept at a point. A restore makes a branch (`create_branch`);
  // finalizing it renames the branch it replaces and moves that one's endpoints to it.
  createSnapshot: route({
    method: "POST",
    path: "/projects/{project_id}/branches/{branch_id}/snapshot",
    schema: snapshotCreatedWire,
  }),
  listSnapshots: route({
    method: "GET",
    path: "/projects/{project_id}/snapshots",
    schema: snapshotsResponseWire,
  }),
  updateSnapshot: route({
    method: "PATCH",
    path: "/projects/{project_id}/snapshots/{snapshot_id}",
    schema: snapshotUpdatedWire,
  }),
  deleteSnapshot: route({
    method: "DELETE",
    path: "/projects/{project_id}/snapshots/{snapshot_id}",
    schema: snapshotOperationsWire,
  }),
  restoreSnapshot: route({
    method: "POST",
    path: "/projects/{project_id}/snapshots/{snapshot_id}/restore",
    schema: branchMutationWire,
    shows: "branch",
    alters: ["branches"],
  }),
  finalizeRestore: route({
    method: "POST",
    path: "/projects/{project_id}/branches/{branch_id}/finalize_restore",
    schema: snapshotOperationsWire,
    alters: ["branches", "endpoints"],
  }),
  getBackupSchedule: route({
    method: "GET",
    path: "/projects/{project_id}/branches/{branch_id}/backup_schedule",
    schema: backupScheduleWire,
  }),
  setBackupSchedule: route({
    method: "PUT",
    path: "/projects/{project_id}/branches/{branch_id}/backup_schedule",
    schema: backupScheduleSetWire,
  }),

  // What a branch holds: its changes run `apply_config` on the branch's endpoints (waking a
  // suspended one).
  listRoles: route({
    method: "GET",
    path: "/projects/{project_id}/branches/{branch_id}/roles",
    schema: rolesResponseWire,
  }),
  createRole: route({
    method: "POST",
    path: "/projects/{project_id}/branches/{branch_id}/roles",
    schema: roleMutationWire,
    alters: ["endpoints"],
  }),
  listDatabases: route({
    method: "GET",
    path: "/projects/{project_id}/branches/{branch_id}/databases",
    schema: databasesResponseWire,
  }),
  createDatabase: route({
    method: "POST",
    path: "/projects/{project_id}/branches/{branch_id}/databases",
    schema: databaseMutationWire,
    alters: ["endpoints"],
  }),

  // Role passwords and connection URIs (412: the project does not store passwords).
  revealPassword: route({
    method: "GET",
    path: "/projects/{project_id}/branches/{branch_id}/roles/{role_name}/reveal_password",
    schema: rolePasswordWire,
  }),
  // The new password is valid once its operations finish.
  resetPassword: route({
    method: "POST",
    path: "/projects/{project_id}/branches/{branch_id}/roles/{role_name}/reset_password",
    schema: passwordResetWire,
  }),
  connectionUri: route({
    method: "GET",
    path: "/projects/{project_id}/connection_uri",
    schema: connectionUriWire,
  }),

  // Who a project is shared with, by e-mail. A grant or a revocation starts no operation and
  // changes none of the project's lists: it takes no turn in the project's gate.
  listProjectPermissions: route({
    method: "GET",
    path: "/projects/{project_id}/permissions",
    schema: projectPermissionsWire,
  }),
  grantProjectPermission: route({
    method: "POST",
    path: "/projects/{project_id}/permissions",
    schema: projectPermissionWire,
  }),
  revokeProjectPermission: route({
    method: "DELETE",
    path: "/projects/{project_id}/permissions/{permission_id}",
    schema: projectPermissionWire,
  }),
  // The projects shared with the key's user (paged as the project list is).
  listSharedProjects: route({ method: "GET", path: "/projects/shared", schema: projectsPageWire }),

  // An organization's keys, one scoped to a project included (created with an admin's personal key).
  listOrgApiKeys: route({ method: "GET", path: "/organizations/{org_id}/api_keys", schema: orgApiKeysWire }),
  createOrgApiKey: route({
    method: "POST",
    path: "/organizations/{org_id}/api_keys",
    schema: orgApiKeyCreatedWire,
  }),
  revokeOrgApiKey: route({
    method: "DELETE",
    path: "/organizations/{org_id}/api_keys/{key_id}",
    schema: orgApiKeyRevokedWire,
  }),
} as const;
