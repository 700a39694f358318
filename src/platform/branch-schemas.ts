/**
 * The platform's branch objects (snake_case wire, camelCase for the operator), after the official
 * OpenAPI document's `Branch`, `BranchCreateRequest`, `BranchUpdateRequest` and the branch
 * responses (`public-v2-for-users.gen.yaml`). Required here: what the document requires and the
 * operator relies on; the deprecated and usage fields are tolerated, not needed.
 */
import { z } from "zod";
import { endpointBody, endpointWire, operationWire, type EndpointCreateSpec } from "./schemas.ts";

const timestamp = z.string();

export const branchWire = z
  .object({
    id: z.string(),
    project_id: z.string(),
    parent_id: z.string().optional(),
    parent_lsn: z.string().optional(),
    parent_timestamp: timestamp.optional(),
    name: z.string(),
    // init, resetting, ready or archived in the document; a string so a new state lists too.
    current_state: z.string(),
    pending_state: z.string().optional(),
    state_changed_at: timestamp,
    logical_size: z.number().int().optional(),
    creation_source: z.string().optional(),
    default: z.boolean(),
    protected: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
    expires_at: timestamp.optional(),
    ttl_interval_seconds: z.number().int().optional(),
    last_reset_at: timestamp.optional(),
    init_source: z.string().optional(),
    // A branch a snapshot's restore made: `restored`, then `finalized`.
    restore_status: z.string().optional(),
    restored_from: z.string().optional(),
    restored_as: z.string().optional(),
    restricted_actions: z.array(z.object({ name: z.string(), reason: z.string() })).optional(),
  })
  .transform((b) => ({
    id: b.id,
    projectId: b.project_id,
    parentId: b.parent_id,
    parentLsn: b.parent_lsn,
    parentTimestamp: b.parent_timestamp,
    name: b.name,
    currentState: b.current_state,
    pendingState: b.pending_state,
    stateChangedAt: b.state_changed_at,
    logicalSize: b.logical_size,
    default: b.default,
    protected: b.protected,
    createdAt: b.created_at,
    updatedAt: b.updated_at,
    expiresAt: b.expires_at,
    lastResetAt: b.last_reset_at,
    initSource: b.init_source,
    // Optional keys: a branch made by hand (tests, caches) need not name them.
    ...(b.restore_status === undefined ? {} : { restoreStatus: b.restore_status }),
    ...(b.restored_from === undefined ? {} : { restoredFrom: b.restored_from }),
    ...(b.restored_as === undefined ? {} : { restoredAs: b.restored_as }),
    /** What the platform refuses on this branch (an anonymized branch's restore, say), with why. */
    ...(b.restricted_actions === undefined ? {} : { restrictedActions: b.restricted_actions }),
    /** The branch's annotations, where the answer carries them (the list does, keyed by branch). */
    annotations: undefined as Record<string, string> | undefined,
  }));

export type Branch = z.output<typeof branchWire>;

/** What a branch mutation answers: the branch and the operations it started (none for a rename). */
export const branchMutationWire = z
  .object({
    branch: branchWire,
    operations: z.array(operationWire),
    endpoints: z.array(endpointWire).optional(),
  })
  .transform((m) => ({ branch: m.branch, operations: m.operations, endpoints: m.endpoints ?? [] }));

export type BranchMutation = z.output<typeof branchMutationWire>;

export const branchResponseWire = z.object({ branch: branchWire });
/** One page of `GET /projects/{project_id}/branches`; `pagination.next` names the next page. */
export const branchesResponseWire = z.object({
  branches: z.array(branchWire),
  /** The listed branches' annotations, by branch id (`AnnotationsMapResponse`). */
  annotations: z.record(z.string(), z.object({ value: z.record(z.string(), z.string()) })).optional(),
  pagination: z.object({ next: z.string().optional() }).optional(),
});

/** A new branch (camelCase of `BranchCreateRequest.branch`). */
export interface BranchCreateSpec {
  /** The parent's branch id; the project's default branch when absent. */
  parentId?: string;
  name?: string;
  protected?: boolean;
  /** RFC 3339; must be in the future. */
  expiresAt?: string;
  /** The parent as it was then (RFC 3339), within its restore window; not with `parentLsn`. */
  parentTimestamp?: string;
  /** The parent as it was at this LSN, within its restore window; not with `parentTimestamp`. */
  parentLsn?: string;
  /** `schema-only`: the parent's schema without a row, as a new root branch. Default: `parent-data`. */
  initSource?: "schema-only" | "parent-data";
  /** Annotations, set only at creation (the body's `annotation_value`): the operator's owner mark. */
  annotations?: Record<string, string>;
  /** Endpoints created with the branch, in the same request (`BranchCreateRequestEndpointOptions`). */
  endpoints?: BranchEndpointOptions[];
}

/** What the create-branch body accepts of an endpoint: no name, pooler or disabled (those need a PATCH). */
const branchEndpointFields = [
  "type",
  "autoscalingLimitMinCu",
  "autoscalingLimitMaxCu",
  "suspendTimeoutSeconds",
  "provisioner",
  "pgSettings",
] as const satisfies readonly (keyof EndpointCreateSpec)[];

export type BranchEndpointOptions = Pick<EndpointCreateSpec, (typeof branchEndpointFields)[number]>;

/** The part of an endpoint's create the create-branch body accepts (the rest is a PATCH after). */
export function branchEndpointOptions(spec: EndpointCreateSpec): BranchEndpointOptions {
  const given = branchEndpointFields.filter((field) => spec[field] !== undefined);
  return Object.fromEntries(given.map((field) => [field, spec[field]])) as BranchEndpointOptions;
}

/** What may change on a branch (`BranchUpdateRequest.branch`); `expiresAt: null` removes the expiry. */
export interface BranchPatch {
  name?: string;
  protected?: boolean;
  expiresAt?: string | null;
}

/** The platform's `{"branch": {...}}` body, leaving out attributes not given. */
export function branchBody(spec: BranchCreateSpec | BranchPatch): {
  branch: Record<string, unknown>;
  annotation_value?: Record<string, string>;
  endpoints?: Record<string, unknown>[];
} {
  const wire: Record<string, unknown> = {
    parent_id: "parentId" in spec ? spec.parentId : undefined,
    name: spec.name,
    protected: spec.protected,
    expires_at: spec.expiresAt,
    parent_timestamp: "parentTimestamp" in spec ? spec.parentTimestamp : undefined,
    parent_lsn: "parentLsn" in spec ? spec.parentLsn : undefined,
    init_source: "initSource" in spec ? spec.initSource : undefined,
  };
  for (const key of Object.keys(wire)) if (wire[key] === undefined) delete wire[key];
  const annotations = "annotations" in spec ? spec.annotations : undefined;
  const endpoints = "endpoints" in spec ? spec.endpoints : undefined;
  return {
    branch: wire,
    ...(annotations ? { annotation_value: annotations } : {}),
    ...(endpoints?.length ? { endpoints: endpoints.map((e) => endpointBody(e).endpoint) } : {}),
  };
}
