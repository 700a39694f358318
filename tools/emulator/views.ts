// Records as the platform's JSON shows them.
import {
  settledStatuses,
  type AccountRecord,
  type AnonymizationRecord,
  type ApiKeyRecord,
  type BranchRecord,
  type DatabaseRecord,
  type DefaultEndpointSettings,
  type EndpointRecord,
  type OperationRecord,
  type ProjectRecord,
  type RoleRecord,
  type SnapshotRecord,
} from "./model.ts";
import { restrictedActionsOf } from "./anonymized.ts";
import { defaultPlan, limitsOf, subscriptionType } from "./plans.ts";
import { formatLsn } from "./postgres/lsn.ts";
import { formatTimestamp } from "./timestamps.ts";

/** The `host` form `<endpoint id>.<region host>`. */
export function endpointHost(endpoint: EndpointRecord, project: ProjectRecord): string {
  return `${endpoint.id}.${project.proxyHost}`;
}

export interface ViewOptions {
  /** Leave out the fields the OpenAPI document marks deprecated. */
  dropDeprecatedFields?: boolean;
}

export function endpointView(
  e: EndpointRecord,
  project: ProjectRecord,
  options: ViewOptions & { pendingState?: boolean } = {},
): Record<string, unknown> {
  return {
    host: endpointHost(e, project),
    id: e.id,
    ...(e.name === undefined ? {} : { name: e.name }),
    project_id: e.projectId,
    branch_id: e.branchId,
    autoscaling_limit_min_cu: e.minCu,
    autoscaling_limit_max_cu: e.maxCu,
    region_id: project.regionId,
    type: e.type,
    current_state: e.currentState,
    ...(options.pendingState && e.pendingState !== undefined ? { pending_state: e.pendingState } : {}),
    settings: { pg_settings: e.pgSettings },
    // Deprecated: pooling is chosen per connection by the -pooler host; pooler_mode's sunset is past.
    ...(options.dropDeprecatedFields ? {} : { pooler_enabled: e.poolerEnabled, pooler_mode: "transaction" }),
    disabled: e.disabled,
    passwordless_access: e.passwordlessAccess,
    ...(e.lastActive === undefined ? {} : { last_active: formatTimestamp(e.lastActive) }),
    creation_source: e.creationSource,
    created_at: formatTimestamp(e.createdAt),
    updated_at: formatTimestamp(e.updatedAt),
    ...(e.startedAt === undefined ? {} : { started_at: formatTimestamp(e.startedAt) }),
    ...(e.suspendedAt === undefined ? {} : { suspended_at: formatTimestamp(e.suspendedAt) }),
    proxy_host: project.proxyHost,
    suspend_timeout_seconds: e.suspendTimeoutSeconds,
    provisioner: e.provisioner,
  };
}

export function operationView(op: OperationRecord, now: number): Record<string, unknown> {
  const createdMs = Math.floor(op.createdMicros / 1000);
  const done = settledStatuses.has(op.status);
  return {
    id: op.id,
    project_id: op.projectId,
    ...(op.branchId === undefined ? {} : { branch_id: op.branchId }),
    ...(op.endpointId === undefined ? {} : { endpoint_id: op.endpointId }),
    action: op.action,
    status: op.status,
    ...(op.error === undefined ? {} : { error: op.error }),
    failures_count: op.failuresCount,
    ...(op.retryAt === undefined ? {} : { retry_at: formatTimestamp(op.retryAt) }),
    created_at: formatTimestamp(createdMs),
    updated_at: formatTimestamp(op.updatedAt),
    total_duration_ms: Math.max(0, Math.round((done ? op.updatedAt : now) - createdMs)),
  };
}

/** The settings new endpoints of a project start with (older state files: 1 CU fixed, default autosuspend). */
export function defaultEndpointSettingsOf(p: ProjectRecord): DefaultEndpointSettings {
  return (
    p.defaultEndpointSettings ?? {
      autoscaling_limit_min_cu: 1,
      autoscaling_limit_max_cu: 1,
      suspend_timeout_seconds: 0,
    }
  );
}

/** A project as `GET /projects` lists it (`ProjectListItem`); a deleted one with its recovery window. */
export function projectView(
  p: ProjectRecord,
  options: ViewOptions & { deleted?: { deletedAt: number; purgeAt: number } } = {},
): Record<string, unknown> {
  return {
    id: p.id,
    platform_id: p.platformId,
    region_id: p.regionId,
    name: p.name,
    provisioner: p.provisioner,
    default_endpoint_settings: defaultEndpointSettingsOf(p),
    settings: p.settings ?? {},
    pg_version: p.pgVersion,
    proxy_host: p.proxyHost,
    branch_logical_size_limit: p.branchLogicalSizeLimitMiB,
    branch_logical_size_limit_bytes: p.branchLogicalSizeLimitMiB * 1024 * 1024,
    store_passwords: p.storePasswords ?? true,
    active_time: 0,
    ...(options.dropDeprecatedFields ? {} : { cpu_used_sec: 0 }),
    locked: false,
    creation_source: "console",
    created_at: formatTimestamp(p.createdAt),
    updated_at: formatTimestamp(p.updatedAt),
    owner_id: p.ownerId,
    ...(p.orgId === undefined ? {} : { org_id: p.orgId }),
    history_retention_seconds: historyRetentionOf(p),
    ...(p.hipaaEnabledAt === undefined ? {} : { hipaa_enabled_at: formatTimestamp(p.hipaaEnabledAt) }),
    ...(options.deleted === undefined
      ? {}
      : {
          deleted_at: formatTimestamp(options.deleted.deletedAt),
          recoverable_until: formatTimestamp(options.deleted.purgeAt),
        }),
  };
}

export const historyRetentionOf = (p: ProjectRecord): number => p.historyRetentionSeconds ?? 86_400;

/**
 * A project as `GET /projects/{id}` and the changes answer it (`Project`): the list's fields,
 * its owner, and the consumption figures, all 0 (nothing is metered) for the current month.
 */
export function projectDetailView(
  p: ProjectRecord,
  owner: AccountRecord,
  options: ViewOptions & { computeLastActiveAt?: number | undefined } = {},
): Record<string, unknown> {
  const { active_time: _active, ...listed } = projectView(p, options);
  const now = new Date(p.updatedAt);
  const periodStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
  const periodEnd = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  const limits = limitsOf(owner);
  return {
    ...listed,
    data_storage_bytes_hour: 0,
    data_transfer_bytes: 0,
    written_data_bytes: 0,
    compute_time_seconds: 0,
    active_time_seconds: 0,
    synthetic_storage_size: 0,
    consumption_period_start: formatTimestamp(periodStart),
    consumption_period_end: formatTimestamp(periodEnd),
    owner: {
      email: owner.email,
      name: owner.name,
      branches_limit: 5000,
      subscription_type: subscriptionType(limits.plan),
    },
    ...(options.computeLastActiveAt === undefined
      ? {}
      : { compute_last_active_at: formatTimestamp(options.computeLastActiveAt) }),
  };
}

/** A branch's annotation (`AnnotationData`); one never given shows an empty value. */
export function annotationView(b: BranchRecord): Record<string, unknown> {
  const object = { type: "console/branch", id: b.id };
  if (b.annotation === undefined) return { object, value: {} };
  return {
    object,
    value: b.annotation.value,
    created_at: formatTimestamp(b.annotation.createdAt),
    updated_at: formatTimestamp(b.annotation.updatedAt),
  };
}

export function apiKeyListView(k: ApiKeyRecord, creator: AccountRecord): Record<string, unknown> {
  return {
    id: k.id,
    name: k.name,
    created_at: formatTimestamp(k.createdAt),
    created_by: { id: creator.id, name: creator.name, image: creator.image },
    last_used_at: k.lastUsedAt === undefined ? null : formatTimestamp(k.lastUsedAt),
    last_used_from_addr: k.lastUsedFromAddr,
  };
}

/** A create's answer: the one time the key's value is shown. `created_by` is the creator's id. */
export function apiKeyCreateView(k: ApiKeyRecord, value: string, createdBy: string): Record<string, unknown> {
  return {
    id: k.id,
    key: value,
    name: k.name,
    created_at: formatTimestamp(k.createdAt),
    created_by: createdBy,
  };
}

export function apiKeyRevokeView(k: ApiKeyRecord, creator: AccountRecord): Record<string, unknown> {
  return {
    id: k.id,
    name: k.name,
    created_at: formatTimestamp(k.createdAt),
    created_by: creator.id,
    last_used_at: k.lastUsedAt === undefined ? null : formatTimestamp(k.lastUsedAt),
    last_used_from_addr: k.lastUsedFromAddr,
    revoked: k.revoked,
  };
}

/** `GET /auth`: who the key belongs to, the identity a client keys its rate budget by. */
export function authDetailsView(account: AccountRecord): Record<string, unknown> {
  return { account_id: account.id, auth_method: account.kind === "user" ? "api_key_user" : "api_key_org" };
}

/** `GET /users/me` for a user's key, with its plan's limits. */
export function currentUserView(account: AccountRecord, options: ViewOptions = {}): Record<string, unknown> {
  const login = options.dropDeprecatedFields ? {} : { login: account.email };
  const limits = limitsOf(account);
  return {
    id: account.id,
    email: account.email,
    ...login,
    name: account.name,
    last_name: "",
    image: account.image,
    active_seconds_limit: 0,
    projects_limit: limits.maxProjects,
    branches_limit: 5000,
    max_autoscaling_limit: Math.min(16, limits.maxComputeUnits),
    auth_accounts: [
      { provider: "keycloak", email: account.email, name: account.name, ...login, image: account.image },
    ],
    plan: limits.plan,
  };
}

/** An organization as `GET /users/me/organizations` lists it. */
export function organizationView(
  id: string,
  name: string,
  createdAt: number,
  plan: string = defaultPlan,
): Record<string, unknown> {
  return {
    id,
    name,
    handle: id,
    plan,
    created_at: formatTimestamp(createdAt),
    updated_at: formatTimestamp(createdAt),
    managed_by: "console",
  };
}

/** Where a branch comes from: its parent and the point of its history (a root branch has neither). */
function parentView(b: BranchRecord): Record<string, unknown> {
  if (b.parentId === undefined) return {};
  return {
    parent_id: b.parentId,
    parent_timestamp: formatTimestamp(b.parentPoint?.at ?? b.createdAt),
    ...(b.parentPoint === undefined ? {} : { parent_lsn: formatLsn(b.parentPoint.lsn) }),
  };
}

/** What a snapshot's restore made of the branch: `restored` until finalized. */
function restoreView(b: BranchRecord): Record<string, unknown> {
  if (b.restore === undefined) return {};
  return {
    restore_status: b.restore.status,
    restored_from: b.restore.snapshotId,
    ...(b.restore.status === "finalized" ? { restored_as: b.restore.targetBranchId } : {}),
  };
}

/** A branch as the platform shows it. No storage or compute is accounted: those figures are 0. */
export function branchView(b: BranchRecord, options: ViewOptions = {}): Record<string, unknown> {
  const updatedAt = b.updatedAt ?? b.createdAt;
  const restricted = restrictedActionsOf(b);
  return {
    id: b.id,
    project_id: b.projectId,
    ...parentView(b),
    name: b.name,
    current_state: b.currentState ?? "ready",
    ...(b.currentState === "init" ? { pending_state: "ready" } : {}),
    state_changed_at: formatTimestamp(b.stateChangedAt ?? b.createdAt),
    creation_source: "console",
    ...(options.dropDeprecatedFields ? {} : { primary: b.primary, cpu_used_sec: 0 }),
    default: b.primary,
    protected: b.protected ?? false,
    active_time_seconds: 0,
    compute_time_seconds: 0,
    written_data_bytes: 0,
    data_transfer_bytes: 0,
    ...(b.expiresAt === undefined ? {} : { expires_at: formatTimestamp(b.expiresAt) }),
    ...(b.initSource !== undefined
      ? { init_source: b.initSource }
      : b.parentId === undefined
        ? {}
        : { init_source: "parent-data" }),
    ...(b.lastResetAt === undefined ? {} : { last_reset_at: formatTimestamp(b.lastResetAt) }),
    ...restoreView(b),
    ...(restricted.length === 0 ? {} : { restricted_actions: restricted }),
    created_at: formatTimestamp(b.createdAt),
    updated_at: formatTimestamp(updatedAt),
  };
}

/** A role; its password only where the platform shows one (a create's or a reset's response). */
export function roleView(branchId: string, role: RoleRecord, password?: string): Record<string, unknown> {
  return {
    branch_id: branchId,
    name: role.name,
    ...(password === undefined ? {} : { password }),
    protected: role.protected,
    authentication_method: role.password === undefined ? "no_login" : "password",
    created_at: formatTimestamp(role.createdAt),
    updated_at: formatTimestamp(role.updatedAt),
  };
}

export function databaseView(branchId: string, database: DatabaseRecord): Record<string, unknown> {
  return {
    id: database.id,
    branch_id: branchId,
    name: database.name,
    owner_name: database.ownerName,
    created_at: formatTimestamp(database.createdAt),
    updated_at: formatTimestamp(database.updatedAt),
  };
}

/**
 * A snapshot (`Snapshot`). Nothing is metered in the emulator: `full_size` is 0, which the
 * document reads as "not being charged".
 */
export function snapshotView(s: SnapshotRecord): Record<string, unknown> {
  return {
    id: s.id,
    name: s.name,
    slug: s.slug,
    lsn: formatLsn(s.point.lsn),
    timestamp: formatTimestamp(s.point.at),
    source_branch_id: s.sourceBranchId,
    created_at: formatTimestamp(s.createdAt),
    ...(s.expiresAt === undefined ? {} : { expires_at: formatTimestamp(s.expiresAt) }),
    manual: s.manual,
    full_size: 0,
  };
}

/** An anonymized branch's state (`AnonymizedBranchStatusResponse`). */
export function anonymizedStatusView(b: BranchRecord, a: AnonymizationRecord): Record<string, unknown> {
  const run = a.lastRun;
  return {
    project_id: b.projectId,
    branch_id: b.id,
    state: a.state,
    ...(a.statusMessage === undefined ? {} : { status_message: a.statusMessage }),
    created_at: formatTimestamp(a.createdAt),
    updated_at: formatTimestamp(a.updatedAt),
    ...(a.failedAt === undefined ? {} : { failed_at: formatTimestamp(a.failedAt) }),
    ...(run === undefined
      ? {}
      : {
          last_run: {
            started_at: formatTimestamp(run.startedAt),
            ...(run.completedAt === undefined ? {} : { completed_at: formatTimestamp(run.completedAt) }),
            ...(run.triggeredBy === undefined ? {} : { triggered_by: run.triggeredBy }),
            ...(run.maskedColumns === undefined ? {} : { masked_columns: run.maskedColumns }),
          },
        }),
  };
}
