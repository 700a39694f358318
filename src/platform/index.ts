// The platform client layer: everything other layers use from src/platform.
export { Account, type AccountOptions } from "./account.ts";
export { Accounts, type AccountsOptions } from "./accounts.ts";
export {
  PLATFORM_RATE_LIMITS,
  RateBudget,
  accountShare,
  type RateLimits,
  type RequestKind,
} from "./budget.ts";
export {
  DEFAULT_BASE_URL,
  PlatformClient,
  type CallOptions,
  type MutationOptions,
  type PlatformClientOptions,
} from "./client.ts";
export { MutationGate, type MutationGateOptions } from "./gate.ts";
export { KeyListCache } from "./key-list.ts";
export { endpointOfHost, maxConnectionsFor, pooledHost, suspendTimeoutSeconds } from "./endpoint-facts.ts";
export * from "./errors.ts";
export type { RetryOptions } from "./exchange.ts";
export { noMetrics, type PlatformMetrics, type PlatformRequestInfo } from "./metrics.ts";
export {
  isSettled,
  isFailed,
  isRetrying,
  OperationsTracker,
  summarizeOperations,
  waitForOperations,
  type OperationPolling,
  type OperationsOutcome,
  type OperationsPage,
  type OperationsSource,
  type OperationsTrackerOptions,
  type RefreshOptions,
  type WaitOptions,
} from "./operations.ts";
export { Project, type ProjectOptions } from "./project.ts";
export { pathOf, routes, type Route } from "./routes.ts";
export type {
  ApiKey,
  ApiKeyCreated,
  ApiKeyRevoked,
  AuthDetails,
  Endpoint,
  EndpointCreateSpec,
  EndpointMutation,
  EndpointPatch,
  EndpointType,
  Operation,
  OperationStatus,
} from "./schemas.ts";
export type {
  Branch,
  BranchCreateSpec,
  BranchEndpointOptions,
  BranchMutation,
  BranchPatch,
} from "./branch-schemas.ts";
export { branchEndpointOptions } from "./branch-schemas.ts";
export type {
  DefaultEndpointSettings,
  Project as PlatformProject,
  ProjectCreated,
  ProjectCreateSpec,
  ProjectMutation,
  ProjectPatch,
  ProjectSettings,
} from "./project-schemas.ts";
export type { ConnectionUriQuery, PasswordReset } from "./role-schemas.ts";
export type { OrgApiKey, OrgApiKeyCreated, OrgApiKeyRevoked, ProjectPermission } from "./access-schemas.ts";
export type {
  BranchRestore,
  BranchRestoreSpec,
  Database,
  DatabaseCreateSpec,
  DatabaseMutation,
  Role,
  RoleMutation,
} from "./branch-content-schemas.ts";
export { ListSnapshot, type SnapshotItem, type SnapshotOptions } from "./snapshot.ts";
export type { AnonymizedBranchSpec, AnonymizedStatus, MaskingRule } from "./anonymized-schemas.ts";
export type {
  BackupScheduleItem,
  Snapshot,
  SnapshotCreated,
  SnapshotCreateSpec,
  SnapshotPatch,
  SnapshotRestoreSpec,
} from "./snapshot-schemas.ts";
export type { TransportTimeouts } from "./transport.ts";
