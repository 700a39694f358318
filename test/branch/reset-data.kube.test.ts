// A reset from the parent on real data: rows written on a preview branch are gone once the Branch
// reports the reset done, and the parent's rows are there, read through the emulator's Postgres
// with nothing but the platform's connection URI.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BranchObject } from "../../src/controllers/branch/index.ts";
import { type ComputeEndpointObject } from "../../src/controllers/computeendpoint/index.ts";
import type { Controller, KubeObject } from "../../src/runtime/index.ts";
import { together } from "../support/controllers.ts";
import { eventually, kubectl } from "../support/kube.ts";
import { startOperatorHarness, type OperatorHarness } from "../support/operator.ts";
import { branch, branches, condition, endpoints, ready } from "./scenario.ts";
import { branchController, computeEndpointController } from "../../src/controllers/registry.ts";

let h: OperatorHarness;
const clients: pg.Client[] = [];

const factory = together(
  (o) => branchController(o) as unknown as Controller<KubeObject>,
  (o) => computeEndpointController(o) as unknown as Controller<KubeObject>,
);

/** The platform's connection URI of a branch's read-write endpoint, for the default role and database. */
async function connectionUri(branchId: string): Promise<string> {
  const query = new URLSearchParams({
    branch_id: branchId,
    database_name: "neondb",
    role_name: "neondb_owner",
  });
  const res = await fetch(`${h.emulator.url}/projects/proj-alpha/connection_uri?${query.toString()}`, {
    headers: { authorization: `Bearer ${h.emulator.bootstrapKey}` },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { uri: string }).uri;
}

async function sql(branchId: string, text: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: await connectionUri(branchId) });
  client.on("error", () => undefined);
  clients.push(client);
  await client.connect();
  try {
    const result = await client.query<{ note: string }>(text);
    return result.rows.map((r) => r.note);
  } finally {
    await client.end();
  }
}

function endpoint(name: string, on: Record<string, unknown>) {
  return {
    apiVersion: "neoncloud.dev/v1alpha1",
    kind: "ComputeEndpoint",
    metadata: { name },
    spec: { projectId: "proj-alpha", ...on },
  };
}

beforeAll(async () => {
  h = await startOperatorHarness(factory, { prefix: "branch-reset-data" });
  await h.start();
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
  await h?.stop();
});

describe("reset from parent, on real data", () => {
  it("rows written on the child are gone after the reset; the parent's are there", async () => {
    // The parent, dev, gets an endpoint and a row.
    await h.apply(endpoint("dev", { branchId: "br-dev" }));
    await ready<ComputeEndpointObject>(h, endpoints, "dev");
    await sql("br-dev", "CREATE TABLE notes (note text)");
    await sql("br-dev", "INSERT INTO notes VALUES ('from dev')");

    // The preview starts with the parent's row; the child writes one of its own.
    await h.apply(branch("preview", { parent: { branchName: "dev" } }));
    const created = await ready<BranchObject>(h, branches, "preview");
    const id = created.status!.branchId!;
    await h.apply(endpoint("preview", { branchRef: { name: "preview" } }));
    await ready<ComputeEndpointObject>(h, endpoints, "preview");
    await sql(id, "INSERT INTO notes VALUES ('from preview')");
    expect((await sql(id, "SELECT note FROM notes ORDER BY note")).sort()).toEqual([
      "from dev",
      "from preview",
    ]);

    await kubectl([
      "annotate",
      branches,
      "preview",
      "-n",
      h.namespace,
      "neoncloud.dev/restoredFromParentAt=1",
    ]);
    await eventually(
      async () => {
        const obj = await h.get<BranchObject>(branches, "preview");
        const c = condition(obj, "Ready");
        return c?.status === "True" && obj.status?.restoredFromParentAt === "1" ? obj : undefined;
      },
      { what: "preview reset and Ready", timeoutMs: 30_000, intervalMs: 100 },
    );
    await ready<ComputeEndpointObject>(h, endpoints, "preview");
    expect(await sql(id, "SELECT note FROM notes ORDER BY note")).toEqual(["from dev"]);
  });
});
