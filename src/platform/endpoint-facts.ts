// What the platform derives from an endpoint without saying so in its answers: the host of its
// connection pooler, the endpoint a host names, and its connection limit. Platform knowledge, shared by every kind that
// publishes an endpoint's connection (ComputeEndpoint, Project's default endpoint).
import type { Endpoint } from "./schemas.ts";

/** max_connections by minimum compute size, from the platform's Limits table (0.25 to 8 CU). */
const maxConnectionsByCu: ReadonlyMap<number, number> = new Map([
  [0.25, 112],
  [0.5, 225],
  [1, 450],
  [2, 901],
  [3, 1351],
  [4, 1802],
  [5, 2253],
  [6, 2703],
  [7, 3154],
  [8, 3604],
]);

/** Undefined above 8 CU: the platform does not publish the figure, and status must not guess. */
export function maxConnectionsFor(minCu: number): number | undefined {
  return maxConnectionsByCu.get(minCu);
}

/**
 * The endpoint a connection host names: the platform's hosts are the endpoint's id and its region's
 * host (`ep-x-y-1234abcd.region.host`, platform-facts.md), so the id is the first label. Undefined
 * for a host of another form (a pooled one, an address of a local Postgres, a proxy's name): only
 * the project's endpoint list tells which endpoint that is.
 */
export function endpointOfHost(host: string): string | undefined {
  const dot = host.indexOf(".");
  const label = dot > 0 ? host.slice(0, dot) : "";
  return /^ep-[a-z0-9-]{1,57}$/.test(label) && !label.endsWith("-pooler") ? label : undefined;
}

/** `ep-x-y-1234abcd.region.host` → `ep-x-y-1234abcd-pooler.region.host`, as the platform forms it. */
export function pooledHost(endpoint: Pick<Endpoint, "id" | "host">): string {
  return endpoint.host.startsWith(`${endpoint.id}.`)
    ? `${endpoint.id}-pooler${endpoint.host.slice(endpoint.id.length)}`
    : endpoint.host.replace(/^([^.]+)/, "$1-pooler");
}

/**
 * The platform's `suspend_timeout_seconds` for an autosuspend delay: -1 never suspends; a delay is
 * whole seconds.
 */
export function suspendTimeoutSeconds(delayMs: number | "never"): number {
  return delayMs === "never" ? -1 : Math.round(delayMs / 1000);
}
