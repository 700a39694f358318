/**
 * The platform's wire format (snake_case) and the camelCase objects the rest of the operator sees.
 * Each schema is the single place where a field's presence is decided: required fields are those
 * platform-api.md shows without "optional" and the operator relies on; everything else the
 * platform adds is tolerated (zod drops unknown keys) so a new platform field never breaks us.
 * Timestamps stay ISO 8601 strings, as the platform sends them.
 */
import { z } from "zod";

const timestamp = z.string();

// ---------------------------------------------------------------------------------------------
// Compute endpoints

export type EndpointType = "read_write" | "read_only";

export const endpointWire = z
  .object({
    id: z.string(),
    host: z.string(),
    project_id: z.string(),
    branch_id: z.string(),
    region_id: z.string(),
    type: z.string(),
    autoscaling_limit_min_cu: z.number(),
    autoscaling_limit_max_cu: z.number(),
    current_state: z.string(),
    pending_state: z.string().optional(),
    settings: z.object({ pg_settings: z.record(z.string(), z.string()).optional() }).loose(),
    // Deprecated by the platform (sunset date past): they may disappear from answers at any time.
    pooler_enabled: z.boolean().optional(),
    pooler_mode: z.string().optional(),
    disabled: z.boolean(),
    passwordless_access: z.boolean().optional(),
    last_active: timestamp.optional(),
    created_at: timestamp,
    updated_at: timestamp,
    proxy_host: z.string(),
    // Present on the real platform, not in platform-api.md: optional here.
    name: z.string().optional(),
    suspend_timeout_seconds: z.number().int().optional(),
    provisioner: z.string().optional(),
    creation_source: z.string().optional(),
    started_at: timestamp.optional(),
    suspended_at: timestamp.optional(),
  })
  .transform((e) => ({
    id: e.id,
    host: e.host,
    projectId: e.project_id,
    branchId: e.branch_id,
    regionId: e.region_id,
    // read_write or read_only; kept a string so a new platform type does not break listing.
    type: e.type,
    autoscalingLimitMinCu: e.autoscaling_limit_min_cu,
    autoscalingLimitMaxCu: e.autoscaling_limit_max_cu,
    currentState: e.current_state,
    pendingState: e.pending_state,
    pgSettings: e.settings.pg_settings ?? {},
    poolerEnabled: e.pooler_enabled,
    poolerMode: e.pooler_mode,
    disabled: e.disabled,
    passwordlessAccess: e.passwordless_access,
    lastActive: e.last_active,
    createdAt: e.created_at,
    updatedAt: e.updated_at,
    proxyHost: e.proxy_host,
    name: e.name,
    suspendTimeoutSeconds: e.suspend_timeout_seconds,
    provisioner: e.provisioner,
    creationSource: e.creation_source,
    startedAt: e.started_at,
    suspendedAt: e.suspended_at,
  }));

export type Endpoint = z.output<typeof endpointWire>;

/** Attributes that may be set when creating an endpoint (camelCase of the platform's body). */
export interface EndpointCreateSpec {
  branchId: string;
  type: EndpointType;
  regionId?: string;
  name?: string;
  autoscalingLimitMinCu?: number;
  autoscalingLimitMaxCu?: number;
  /** 0 = platform default (300 s), -1 = never suspend, otherwise 60..604800. */
  suspendTimeoutSeconds?: number;
  poolerEnabled?: boolean;
  poolerMode?: "transaction";
  disabled?: boolean;
  passwordlessAccess?: boolean;
  provisioner?: string;
  pgSettings?: Record<string, string>;
}

/** Attributes that may change on an existing endpoint: the create attributes minus type and region. */
export type EndpointPatch = Partial<Omit<EndpointCreateSpec, "type" | "regionId">>;

/** Builds the platform's `{"endpoint": {...}}` body, leaving out attributes not given. */
export function endpointBody(spec: EndpointPatch & { type?: EndpointType; regionId?: string }): {
  endpoint: Record<string, unknown>;
} {
  const wire: Record<string, unknown> = {
    branch_id: spec.branchId,
    type: spec.type,
    region_id: spec.regionId,
    name: spec.name,
    autoscaling_limit_min_cu: spec.autoscalingLimitMinCu,
    autoscaling_limit_max_cu: spec.autoscalingLimitMaxCu,
    suspend_timeout_seconds: spec.suspendTimeoutSeconds,
    pooler_enabled: spec.poolerEnabled,
    pooler_mode: spec.poolerMode,
    disabled: spec.disabled,
    passwordless_access: spec.passwordlessAccess,
    provisioner: spec.provisioner,
    settings: spec.pgSettings === undefined ? undefined : { pg_settings: spec.pgSettings },
  };
  for (const key of Object.keys(wire)) if (wire[key] === undefined) delete wire[key];
  return { endpoint: wire };
}

// ---------------------------------------------------------------------------------------------
// Operations

export type OperationStatus =
  "scheduling" | "running" | "finished" | "failed" | "error" | "cancelling" | "cancelled" | "skipped";

export const operationWire = z
  .object({
    id: z.string(),
    project_id: z.string(),
    branch_id: z.string().optional(),
    endpoint_id: z.string().optional(),
    action: z.string(),
    status: z.string(),
    failures_count: z.number().int(),
    created_at: timestamp,
    updated_at: timestamp,
    error: z.string().optional(),
    retry_at: timestamp.optional(),
    total_duration_ms: z.number().optional(),
  })
  .transform((o) => ({
    id: o.id,
    projectId: o.project_id,
    branchId: o.branch_id,
    endpointId: o.endpoint_id,
    // Unknown actions are opaque strings; the operator only reports them.
    action: o.action,
    // One of OperationStatus, kept a string so a new platform status does not break listing.
    status: o.status,
    failuresCount: o.failures_count,
    createdAt: o.created_at,
    updatedAt: o.updated_at,
    error: o.error,
    retryAt: o.retry_at,
    totalDurationMs: o.total_duration_ms,
  }));

export type Operation = z.output<typeof operationWire>;

export const paginationWire = z.object({ cursor: z.string() });

export const operationsPageWire = z.object({
  operations: z.array(operationWire),
  pagination: paginationWire.optional(),
});

export const operationResponseWire = z.object({ operation: operationWire });

// ---------------------------------------------------------------------------------------------
// Endpoint responses

/** What every endpoint mutation answers: the endpoint's state and the operations it started. */
export const endpointMutationWire = z.object({
  endpoint: endpointWire,
  operations: z.array(operationWire),
});

export type EndpointMutation = z.output<typeof endpointMutationWire>;

export const endpointResponseWire = z.object({ endpoint: endpointWire });
export const endpointsResponseWire = z.object({ endpoints: z.array(endpointWire) });

// ---------------------------------------------------------------------------------------------
// API keys

export const apiKeyCreatedWire = z
  .object({
    id: z.number().int(),
    key: z.string(),
    name: z.string().optional(),
    created_at: timestamp.optional(),
  })
  .transform((k) => ({ id: k.id, key: k.key, name: k.name, createdAt: k.created_at }));

export type ApiKeyCreated = z.output<typeof apiKeyCreatedWire>;

export const apiKeyWire = z
  .object({
    id: z.number().int(),
    name: z.string(),
    created_at: timestamp,
    last_used_at: timestamp.nullable().optional(),
    last_used_from_addr: z.string().optional(),
  })
  .transform((k) => ({
    id: k.id,
    name: k.name,
    createdAt: k.created_at,
    lastUsedAt: k.last_used_at ?? undefined,
    lastUsedFromAddr: k.last_used_from_addr || undefined,
  }));

export type ApiKey = z.output<typeof apiKeyWire>;

export const apiKeysWire = z.array(apiKeyWire);

export const apiKeyRevokedWire = z
  .object({
    id: z.number().int(),
    name: z.string().optional(),
    revoked: z.boolean(),
    last_used_at: timestamp.nullable().optional(),
    last_used_from_addr: z.string().optional(),
  })
  .transform((k) => ({
    id: k.id,
    name: k.name,
    revoked: k.revoked,
    lastUsedAt: k.last_used_at ?? undefined,
    lastUsedFromAddr: k.last_used_from_addr || undefined,
  }));

export type ApiKeyRevoked = z.output<typeof apiKeyRevokedWire>;

// ---------------------------------------------------------------------------------------------
// Who a key belongs to

export const authDetailsWire = z
  .object({ account_id: z.string(), auth_method: z.string() })
  .transform((a) => ({ accountId: a.account_id, authMethod: a.auth_method }));

export type AuthDetails = z.output<typeof authDetailsWire>;

// ---------------------------------------------------------------------------------------------
// Errors

/** The platform's error body; every field is optional because proxies may answer too. */
export const errorBodyWire = z.object({
  code: z.string().optional(),
  message: z.string().optional(),
  request_id: z.string().optional(),
});
