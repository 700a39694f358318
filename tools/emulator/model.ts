// The records of the emulated world. Plain data (no methods), so the whole
// world can be written to and read from a state file as JSON.

export type EndpointType = "read_write" | "read_only";
export type EndpointState = "init" | "active" | "idle";
/** Every status of the platform's OpenAPI document. */
export type OperationStatus =
  "scheduling" | "running" | "finished" | "failed" | "error" | "cancelling" | "cancelled" | "skipped";

/**
 * The statuses an operation never leaves. `failed` is not one: the platform retries a failed
 * operation (`retry_at`), and `error` is its final failure.
 */
export const settledStatuses: ReadonlySet<OperationStatus> = new Set([
  "finished",
  "error",
  "cancelled",
  "skipped",
]);

/** What an operation fault makes of one operation (decided when it first runs). */
export interface OperationFaultPlan {
  /** How many runs fail: `failures_count` reaches this. */
  failures: number;
  /** After the last failure: the platform's retry succeeds (`finished`), or that failure is final (`error`). */
  then: "finished" | "error";
  /** Emulated time from a failed run to its retry (`retry_at`). */
  retryDelayMs: number;
}

/**
 * Who keys and projects belong to, and whose rate budget a request spends: a
 * user (its keys are `api_key_user`) or an organization (`api_key_org`).
 */
export interface AccountRecord {
  /** A user's id is a UUID; an organization's is `org-...`. */
  id: string;
  kind: "user" | "organization";
  name: string;
  image: string;
  email: string;
  createdAt: number;
  /** What its plan allows; absent (older state files): the default plan's. */
  limits?: PlanLimits;
  /**
   * The organizations a user belongs to besides those its projects name (a user's key must name
   * one of them as `org_id` to list or create projects). Unused for an organization.
   */
  organizations?: OrganizationMembership[];
}

/**
 * A user's place in an organization. When the organization is an account of the world, the user's
 * personal keys act on its projects with the role's rights (access.ts).
 */
export interface OrganizationMembership {
  id: string;
  name: string;
  /** Absent (older state files, seeds that name none): admin, as the creator of an organization is. */
  role?: "admin" | "member";
}

/** The limits of an account's plan where the platform refuses a request (see plans.ts). */
export interface PlanLimits {
  plan: "free" | "launch" | "scale" | "business";
  /** Live projects the account may have (422 PROJECTS_LIMIT_EXCEEDED beyond). */
  maxProjects: number;
  /** The largest `history_retention_seconds` (400 beyond). */
  maxHistoryRetentionSeconds: number;
  /** The largest compute size an endpoint may have, fixed or as a range's maximum (400 beyond). */
  maxComputeUnits: number;
  /** Whether read-only endpoints (read replicas) may be created (422 when not). */
  readReplicas: boolean;
}

export interface ApiKeyRecord {
  id: number;
  /** The account the key belongs to. */
  accountId: string;
  name: string;
  /** sha256 of the key value; the value itself is never stored. */
  digest: string;
  createdAt: number;
  lastUsedAt?: number;
  lastUsedFromAddr: string;
  revoked: boolean;
  /** An organization's key scoped to this one project (`OrgApiKeyCreateRequest.project_id`). */
  projectId?: string;
  /** The user who created an organization's key (its `created_by`); absent: the account's own. */
  createdBy?: string;
}

export interface ProjectRecord {
  id: string;
  /** The account that owns the project; only its keys see it. */
  ownerId: string;
  name: string;
  regionId: string;
  platformId: string;
  provisioner: string;
  pgVersion: number;
  orgId?: string;
  proxyHost: string;
  branchLogicalSizeLimitMiB: number;
  /** Whether the platform keeps role passwords (`reveal_password` answers 412 when not); absent: true. */
  storePasswords?: boolean;
  /** Absent (older state files): one day. */
  historyRetentionSeconds?: number;
  /** The project's `settings` as the platform shows them (the wire form); absent: none set. */
  settings?: ProjectSettings;
  /** What new endpoints of the project start with; absent (older state files): 1 CU fixed. */
  defaultEndpointSettings?: DefaultEndpointSettings;
  /** When `settings.hipaa` was turned on. */
  hipaaEnabledAt?: number;
  /** Who the project is shared with by e-mail (`/projects/{id}/permissions`); absent: nobody. */
  permissions?: ProjectPermissionRecord[];
  createdAt: number;
  updatedAt: number;
}

/** A grant of access to a project for the user of an e-mail address (a collaborator). */
export interface ProjectPermissionRecord {
  id: string;
  email: string;
  grantedAt: number;
}

/** `ProjectSettingsData` of the OpenAPI document, kept in its wire form. */
export interface ProjectSettings {
  quota?: Partial<
    Record<
      | "active_time_seconds"
      | "compute_time_seconds"
      | "written_data_bytes"
      | "data_transfer_bytes"
      | "logical_size_bytes",
      number
    >
  >;
  allowed_ips?: { ips?: string[]; protected_branches_only?: boolean };
  enable_logical_replication?: boolean;
  maintenance_window?: { weekdays: number[]; start_time: string; end_time: string };
  block_public_connections?: boolean;
  block_vpc_connections?: boolean;
  audit_log_level?: "base" | "extended" | "full";
  hipaa?: boolean;
  preload_libraries?: { use_defaults?: boolean; enabled_libraries?: string[] };
}

/** `DefaultEndpointSettings` of the OpenAPI document, kept in its wire form. */
export interface DefaultEndpointSettings {
  autoscaling_limit_min_cu: number;
  autoscaling_limit_max_cu: number;
  suspend_timeout_seconds: number;
  pg_settings?: Record<string, string>;
}

/** A deleted project with everything that was in it, kept until its recovery window ends. */
export interface DeletedProjectRecord {
  project: ProjectRecord;
  deletedAt: number;
  /** When its data is gone for good (emulated ms). */
  purgeAt: number;
  branches: BranchRecord[];
  endpoints: EndpointRecord[];
  operations: OperationRecord[];
  /** Absent in older state files: none. */
  snapshots?: SnapshotRecord[];
}

export type BranchState = "init" | "ready";

export interface BranchRecord {
  id: string;
  projectId: string;
  name: string;
  parentId?: string;
  primary: boolean;
  createdAt: number;
  /** `init` until its create_branch operation finishes; absent (older state files): ready. */
  currentState?: BranchState;
  stateChangedAt?: number;
  updatedAt?: number;
  protected?: boolean;
  /** When the platform deletes it on its own (emulated ms). */
  expiresAt?: number;
  /** When a restore last replaced its data. */
  lastResetAt?: number;
  /** Its Postgres roles and databases; absent (older state files): none. */
  roles?: RoleRecord[];
  databases?: DatabaseRecord[];
  /** The `annotation_value` given at its creation; absent: none. */
  annotation?: { value: Record<string, string>; createdAt: number; updatedAt: number };
  /** `schema-only`: created with its parent's schema and no rows, as a root branch. Absent: `parent-data`. */
  initSource?: "schema-only";
  /** The point of its parent's history it was created from (`parent_timestamp`, `parent_lsn`). */
  parentPoint?: BranchPoint;
  /** Its LSN at its creation (its parent's at the branch point); absent (older state files): a root's first. */
  startLsn?: number;
  /** Its LSN after each change of its data, `[emulated ms, LSN]`, oldest first, within its restore window. */
  lsnHistory?: [number, number][];
  /** When its history was cut short to stay bounded: nothing before it can be asked for. */
  historyFrom?: number;
  /** Set on a branch made by `branch_anonymized`. */
  anonymization?: AnonymizationRecord;
  /** Set on a branch a snapshot's restore made. */
  restore?: RestoreRecord;
  /** Its backup schedule (`PUT .../backup_schedule`); absent: none. */
  backupSchedule?: BackupScheduleItem[];
}

/** A point of a branch's history: an emulated time and the branch's LSN then. */
export interface BranchPoint {
  at: number;
  lsn: number;
}

/** `MaskingRule` of the OpenAPI document, kept in its wire form. */
export interface MaskingRule {
  database_name: string;
  schema_name: string;
  table_name: string;
  column_name: string;
  masking_function?: string;
  masking_value?: string;
}

/** The document's states of an anonymized branch. */
export type AnonymizationState =
  "created" | "initialized" | "initialization_error" | "anonymizing" | "anonymized" | "error";

export interface AnonymizationRecord {
  state: AnonymizationState;
  rules: MaskingRule[];
  /** `start_anonymization`: anonymize as soon as the branch is ready. */
  startWhenReady: boolean;
  statusMessage?: string;
  createdAt: number;
  updatedAt: number;
  failedAt?: number;
  /** The latest run; `triggeredBy` is the user whose key started it (none for `start_anonymization`). */
  lastRun?: { startedAt: number; completedAt?: number; maskedColumns?: number; triggeredBy?: string };
  /** Runs started so far: each draws its own values from the emulator's seed. */
  runs: number;
}

/** A branch a snapshot's restore made: `restored` until finalized, when it takes the target's place. */
export interface RestoreRecord {
  status: "restored" | "finalized";
  snapshotId: string;
  /** The branch it replaces when finalized (`target_branch_id`, else the snapshot's source). */
  targetBranchId: string;
}

/** `BackupScheduleItem` of the OpenAPI document, kept in its wire form. */
export interface BackupScheduleItem {
  frequency: "daily" | "weekly" | "monthly";
  hour?: number;
  day?: number;
  month?: number;
  retention_seconds?: number;
}

/** A snapshot of a branch: its data at a point, kept apart from the branch until deleted or expired. */
export interface SnapshotRecord {
  id: string;
  projectId: string;
  name: string;
  /** Unique within the project (the platform generates one when none is given). */
  slug: string;
  sourceBranchId: string;
  /** The point of the source branch it holds. */
  point: BranchPoint;
  createdAt: number;
  expiresAt?: number;
  /** Taken by a request rather than a backup schedule. */
  manual: boolean;
  /** The source branch's roles and databases at that point: a restore gives them back. */
  roles: RoleRecord[];
  databases: DatabaseRecord[];
}

/** A Postgres role of a branch. */
export interface RoleRecord {
  name: string;
  /** What a connection must give; absent for a role created with `no_login`. */
  password?: string;
  /**
   * A reset's new password. It replaces `password` once `operationId`, the reset's last
   * operation, succeeds (the old one works until then), and is dropped if it fails.
   */
  pendingPassword?: { value: string; operationId: string };
  /** System roles the platform keeps for itself; none are emulated, so always false. */
  protected: boolean;
  createdAt: number;
  updatedAt: number;
}

/** A Postgres database of a branch. */
export interface DatabaseRecord {
  /** Unique in the emulated world, like the platform's int64 ids. */
  id: number;
  name: string;
  ownerName: string;
  createdAt: number;
  updatedAt: number;
}

export interface EndpointRecord {
  id: string;
  projectId: string;
  branchId: string;
  type: EndpointType;
  name?: string;
  minCu: number;
  maxCu: number;
  currentState: EndpointState;
  /** The state an unfinished chain of operations leads to. */
  pendingState?: EndpointState;
  pgSettings: Record<string, string>;
  poolerEnabled: boolean;
  disabled: boolean;
  passwordlessAccess: boolean;
  provisioner: string;
  suspendTimeoutSeconds: number;
  creationSource: string;
  lastActive?: number;
  startedAt?: number;
  suspendedAt?: number;
  createdAt: number;
  updatedAt: number;
}

export type OperationAction =
  | "apply_config"
  | "apply_storage_config"
  | "check_availability"
  | "create_branch"
  | "delete_timeline"
  | "create_timeline"
  | "delete_tenant"
  | "start_compute"
  | "suspend_compute"
  | "timeline_mark_invisible";

export interface OperationRecord {
  id: string;
  projectId: string;
  branchId?: string;
  endpointId?: string;
  action: OperationAction;
  status: OperationStatus;
  failuresCount: number;
  error?: string;
  /** Creation time in microseconds, unique per project: the pagination key. */
  createdMicros: number;
  updatedAt: number;
  /** When the running (or cancelling) phase ends (emulated ms). */
  doneAt?: number;
  /** When the platform runs a `failed` operation again (emulated ms). */
  retryAt?: number;
  /** The operation of the same request that runs after this one. */
  nextId?: string;
  /** Decided when the operation first runs, so a fault applies to it exactly once. */
  fault?: OperationFaultPlan;
}

export interface WorldState {
  accounts: AccountRecord[];
  apiKeys: ApiKeyRecord[];
  nextApiKeyId: number;
  /** The next database id (absent in older state files). */
  nextDatabaseId?: number;
  projects: ProjectRecord[];
  branches: BranchRecord[];
  endpoints: EndpointRecord[];
  operations: OperationRecord[];
  /** Deleted projects within their recovery window (absent in older state files). */
  deletedProjects?: DeletedProjectRecord[];
  /** The projects' snapshots (absent in older state files). */
  snapshots?: SnapshotRecord[];
  nextCheckAvailabilityAt?: number;
  savedAt: number;
}
