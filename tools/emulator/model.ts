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

export interface User {
  id: string;
  name: string;
  image: string;
}

export interface ApiKeyRecord {
  id: number;
  name: string;
  /** sha256 of the key value; the value itself is never stored. */
  digest: string;
  createdAt: number;
  lastUsedAt?: number;
  lastUsedFromAddr: string;
  revoked: boolean;
}

export interface ProjectRecord {
  id: string;
  name: string;
  regionId: string;
  platformId: string;
  provisioner: string;
  pgVersion: number;
  orgId?: string;
  proxyHost: string;
  branchLogicalSizeLimitMiB: number;
  createdAt: number;
  updatedAt: number;
}

export interface BranchRecord {
  id: string;
  projectId: string;
  name: string;
  parentId?: string;
  primary: boolean;
  createdAt: number;
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
  | "check_availability"
  | "create_branch"
  | "create_timeline"
  | "start_compute"
  | "suspend_compute";

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
  user: User;
  apiKeys: ApiKeyRecord[];
  nextApiKeyId: number;
  projects: ProjectRecord[];
  branches: BranchRecord[];
  endpoints: EndpointRecord[];
  operations: OperationRecord[];
  nextCheckAvailabilityAt?: number;
  savedAt: number;
}
