// The one change a ComputeEndpoint pass makes next, decided from the spec, the endpoint as the
// platform shows it, and what the resource last applied. Pure, so every rule is unit-tested on
// its own (computeendpoint-plan.test.ts); the adapter only sends what this returns. At most one
// change per pass: the platform refuses a second while the first runs (423).
import type { ComputeEndpointSpec, ComputeEndpointStatus } from "../api/computeendpoint.ts";
import type { Endpoint, EndpointPatch } from "../platform/index.ts";
import { difference, restartsEndpoint } from "./computeendpoint-desired.ts";

export type Plan =
  /** The endpoint never started (its start failed or was lost): start it. */
  | { action: "start"; why: "never-started" | "resume" }
  /** One PATCH of exactly the fields that differ (a branch move included). */
  | { action: "update"; patch: EndpointPatch; restarts: boolean; moves: boolean }
  /** The restartedAt annotation has a value not acted upon yet. */
  | { action: "restart"; restartedAt: string }
  | { action: "suspend" };

export function plan(
  spec: ComputeEndpointSpec,
  endpoint: Endpoint,
  applied: Pick<ComputeEndpointStatus, "restartedAt" | "suspended">,
  restartedAt: string | undefined,
): Plan | undefined {
  // Nothing of ours is running (operations were waited for), so a start failed or was lost.
  if (endpoint.currentState === "init") return { action: "start", why: "never-started" };
  const patch = difference(spec, endpoint);
  if (Object.keys(patch).length > 0) {
    return {
      action: "update",
      patch,
      restarts: restartsEndpoint(patch),
      moves: patch.branchId !== undefined,
    };
  }
  if (restartedAt !== undefined && restartedAt !== applied.restartedAt)
    return { action: "restart", restartedAt };
  if (spec.suspended === true && endpoint.currentState !== "idle") return { action: "suspend" };
  // Only a change from suspended to not: an endpoint that autosuspended stays idle until used.
  if (spec.suspended === false && applied.suspended === true && endpoint.currentState === "idle") {
    return { action: "start", why: "resume" };
  }
  return undefined;
}
