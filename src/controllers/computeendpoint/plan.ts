// The one change a ComputeEndpoint pass makes next, decided from the spec, the endpoint as the
// platform shows it, and what the resource last applied, with the words its event and condition
// show. Pure, so every rule is unit-tested on its own (plan.test.ts). At most one change per
// pass: the platform refuses a second while the first runs (423).
import type { ComputeEndpointSpec, ComputeEndpointStatus } from "../../api/computeendpoint.ts";
import { restartedAtAnnotation } from "../../api/group.ts";
import type { Endpoint, EndpointPatch } from "../../platform/index.ts";
import type { Step } from "../managed/kind.ts";
import { difference, restartsEndpoint } from "./desired.ts";

export type Plan = Step &
  (
    | /** The endpoint never started (its start failed or was lost), or is to run again: start it. */
      { change: "start"; why: "never-started" | "resume" }
      /** One PATCH of exactly the fields that differ (a branch move included). */
    | { change: "update"; patch: EndpointPatch; restarts: boolean; moves: boolean }
    /** The restartedAt annotation has a value not acted upon yet. */
    | { change: "restart"; restartedAt: string }
    | { change: "suspend" }
  );

export function plan(
  spec: ComputeEndpointSpec,
  endpoint: Endpoint,
  applied: Pick<ComputeEndpointStatus, "restartedAt" | "suspended">,
  restartedAt: string | undefined,
): Plan | undefined {
  const starting = { action: "Start", reason: "Starting" } as const;
  // Nothing of ours is running (operations were waited for), so a start failed or was lost.
  if (endpoint.currentState === "init") {
    const message = "the endpoint never started; starting it";
    return { ...starting, change: "start", why: "never-started", message };
  }
  const patch = difference(spec, endpoint);
  if (Object.keys(patch).length > 0) {
    const [moves, restarts] = [patch.branchId !== undefined, restartsEndpoint(patch)];
    const drops = restarts ? " (a new compute size restarts the endpoint and drops its connections)" : "";
    return {
      action: "Update",
      reason: "Updating",
      event: moves ? "Moving" : "Updating",
      message: moves
        ? `moving endpoint ${endpoint.id} to branch ${patch.branchId}`
        : `updating ${Object.keys(patch).join(", ")}${drops}`,
      change: "update",
      patch,
      restarts,
      moves,
    };
  }
  if (restartedAt !== undefined && restartedAt !== applied.restartedAt) {
    return {
      action: "Restart",
      reason: "Restarting",
      message: `restart requested (${restartedAtAnnotation}=${restartedAt})`,
      change: "restart",
      restartedAt,
    };
  }
  if (spec.suspended === true && endpoint.currentState !== "idle") {
    return { action: "Suspend", reason: "Suspending", message: "spec.suspended is true", change: "suspend" };
  }
  // Only a change from suspended to not: an endpoint that autosuspended stays idle until used.
  if (spec.suspended === false && applied.suspended === true && endpoint.currentState === "idle") {
    return { ...starting, change: "start", why: "resume", message: "spec.suspended changed to false" };
  }
  return undefined;
}
