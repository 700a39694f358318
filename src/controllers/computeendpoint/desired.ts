// From a ComputeEndpoint's spec to what the platform should hold: the create
// body, and the one PATCH of exactly the fields that differ. Pure functions, so
// the rules (which changes restart an endpoint, what "never" means) sit in one
// place, apart from any I/O.
import type { ComputeEndpointSpec, ResolvedComputeEndpointSpec } from "../../api/computeendpoint.ts";
import {
  suspendTimeoutSeconds,
  type Endpoint,
  type EndpointCreateSpec,
  type EndpointPatch,
} from "../../platform/index.ts";
import { parseDuration } from "../../runtime/index.ts";
import { invalidSpec } from "../managed/refusal.ts";

/** spec.autosuspend as the platform's `suspend_timeout_seconds`. */
function suspendTimeout(autosuspend: string): number {
  const ms = autosuspend === "never" ? "never" : parseDuration(autosuspend);
  if (ms === undefined) throw invalidSpec(`spec.autosuspend: "${autosuspend}" is not a duration`);
  return suspendTimeoutSeconds(ms);
}

/** The name an earlier version gave the endpoints it created: `k8s-<uid>`, still known as the resource's own. */
export function legacyName(uid: string): string {
  return `k8s-${uid}`;
}

/** Only the fields the spec states are managed; an unset field keeps the platform's value. */
function managedFields(spec: ComputeEndpointSpec): EndpointPatch {
  const fields: EndpointPatch = {};
  if (spec.computeUnits) {
    fields.autoscalingLimitMinCu = spec.computeUnits.min;
    fields.autoscalingLimitMaxCu = spec.computeUnits.max ?? spec.computeUnits.min;
  }
  if (spec.autosuspend !== undefined) fields.suspendTimeoutSeconds = suspendTimeout(spec.autosuspend);
  if (spec.pooler) {
    fields.poolerEnabled = spec.pooler.enabled;
    fields.poolerMode = spec.pooler.mode;
  }
  if (spec.pgSettings !== undefined) fields.pgSettings = spec.pgSettings;
  if (spec.disabled !== undefined) fields.disabled = spec.disabled;
  return fields;
}

export function createSpec(spec: ResolvedComputeEndpointSpec, name: string): EndpointCreateSpec {
  return { ...managedFields(spec), branchId: spec.branchId, type: spec.type, name };
}

function sameSettings(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

/** Fields the platform deprecated and may leave out of its answers (platform-facts.md). */
const deprecatedFields: ReadonlySet<keyof EndpointPatch> = new Set([
  "poolerEnabled",
  "poolerMode",
  "passwordlessAccess",
]);

/** Exactly the fields whose declared value differs from the endpoint's (branch moves included). */
export function difference(spec: ComputeEndpointSpec, endpoint: Endpoint): EndpointPatch {
  const patch: EndpointPatch = {};
  const wanted = { ...managedFields(spec), branchId: spec.branchId };
  for (const [field, value] of Object.entries(wanted) as [keyof EndpointPatch, unknown][]) {
    if (field === "pgSettings") {
      if (!sameSettings(value as Record<string, string>, endpoint.pgSettings)) {
        patch.pgSettings = value as Record<string, string>;
      }
    } else if (deprecatedFields.has(field) && endpoint[field as keyof Endpoint] === undefined) {
      // The platform no longer reports it: nothing to compare, so nothing differs (a PATCH would
      // be sent on every pass and never show its effect).
    } else if (endpoint[field as keyof Endpoint] !== value) {
      (patch as Record<string, unknown>)[field] = value;
    }
  }
  return patch;
}

/**
 * Whether applying `patch` restarts the endpoint and drops its connections:
 * changing a fixed size or the autoscaling limits does (the contract's rules
 * 1 and 2); autosuspend settings do not (rule 4).
 */
export function restartsEndpoint(patch: EndpointPatch): boolean {
  return patch.autoscalingLimitMinCu !== undefined || patch.autoscalingLimitMaxCu !== undefined;
}
