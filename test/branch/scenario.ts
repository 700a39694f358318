// What the Branch scenarios share: a Branch manifest in the harness' project, and waiting for a
// resource's Ready condition with a reason, for its current generation; a connection Secret's
// data, and whom a connection URL from it connects as.
import pg from "pg";
import type { BranchObject } from "../../src/controllers/branch/index.ts";
import type { ComputeEndpointObject } from "../../src/controllers/computeendpoint/index.ts";
import type { Secret } from "../../src/controllers/managed/credentials.ts";
import { eventually, kubectl } from "../support/kube.ts";
import type { OperatorHarness } from "../support/operator.ts";

export const branches = "branches.neoncloud.dev";
export const endpoints = "computeendpoints.neoncloud.dev";

export function branch(name: string, spec: Record<string, unknown>, annotations?: Record<string, string>) {
  return {
    apiVersion: "neoncloud.dev/v1alpha1",
    kind: "Branch",
    metadata: { name, ...(annotations === undefined ? {} : { annotations }) },
    spec: { projectId: "proj-alpha", ...spec },
  };
}

type Obj = BranchObject | ComputeEndpointObject;

export function condition(obj: Obj, type: string) {
  return obj.status?.conditions?.find((c) => c.type === type);
}

/** Waits until the resource's Ready condition has `reason` for its current generation. */
export async function readyReason<T extends Obj>(
  h: OperatorHarness,
  plural: string,
  name: string,
  status: string,
  reason: string,
): Promise<T> {
  return eventually(
    async () => {
      const obj = await h.get<T>(plural, name);
      const c = condition(obj, "Ready");
      return c?.status === status && c.reason === reason && c.observedGeneration === obj.metadata.generation
        ? obj
        : undefined;
    },
    { what: `${name} Ready=${status} ${reason}`, timeoutMs: 30_000, intervalMs: 100 },
  );
}

export const ready = <T extends Obj>(h: OperatorHarness, plural: string, name: string) =>
  readyReason<T>(h, plural, name, "True", "Available");

/** How many requests of one route the emulator has served (any answer). */
export function served(h: OperatorHarness, route: string): number {
  const counts = h.emulator.requestLog.counters().by_route[route] ?? {};
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

/** A Secret's data, decoded; undefined while it does not exist. */
export async function secretData(
  namespace: string,
  name: string,
): Promise<Record<string, string> | undefined> {
  const out = await kubectl(["get", "secret", name, "-n", namespace, "-o", "json", "--ignore-not-found"]);
  if (!out.trim()) return undefined;
  const data = (JSON.parse(out) as Secret).data ?? {};
  return Object.fromEntries(
    Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]),
  );
}

/** Connects with a URL from a Secret, runs a query, and says as whom and where (`user@database`). */
export async function whoAmI(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => undefined);
  try {
    await client.connect();
    const r = await client.query<{ who: string }>("select current_user || '@' || current_database() as who");
    return r.rows[0]?.who ?? "";
  } finally {
    await client.end().catch(() => undefined);
  }
}
