// A tenant's project adopted with its connection Secret, as bench:tenants adopts thousands: the
// project is read, its default branch listed (whoever made the project marks it there), and the
// Secret's password read; the connection URI names the default endpoint in its host, so its
// endpoint list is not read (two requests a tenant, with the project read from the account's list).
// Where the URI's host names no endpoint (the emulator's local Postgres, as a proxy's name would),
// the endpoint list is read as before, and the Secret connects.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pooledHost } from "../../src/platform/index.ts";
import { kubectl } from "../support/kube.ts";
import { startOperatorHarness, type OperatorHarness } from "../support/operator.ts";
import { factory, project, requests, until, type ProjectObject } from "./scenario.ts";

/** A tenant's project made outside the operator, its operations ended. */
async function tenantProject(h: OperatorHarness, name: string) {
  const made = await h.platform.createProject({ name });
  await h.platform.waitForOperations(made.project.id, made.operations, { timeoutMs: 30_000 });
  const endpoint = made.endpoints.find((e) => e.type === "read_write");
  if (!endpoint) throw new Error("the project has no read-write endpoint");
  return { id: made.project.id, branchId: made.branch.id, endpoint };
}

/** The Project adopting `projectId` with a connection Secret, once Ready with the Secret recorded. */
async function adopt(h: OperatorHarness, name: string, projectId: string): Promise<ProjectObject> {
  await h.apply(project(name, { projectId, connectionSecret: { name: `${name}-db` } }));
  return until(() => h.get<ProjectObject>("project", name), "True", {
    check: (o) => o.status?.connectionSecret?.name === `${name}-db`,
  });
}

async function secretData(h: OperatorHarness, name: string): Promise<Record<string, string>> {
  const text = await kubectl(["get", "secret", name, "-n", h.namespace, "-o", "json"]);
  const data = (JSON.parse(text) as { data: Record<string, string> }).data;
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "base64").toString()]));
}

describe("adopting a tenant's project with its connection Secret, the platform naming its hosts", () => {
  let h: OperatorHarness;
  beforeAll(async () => {
    h = await startOperatorHarness(factory, { prefix: "adopt", emulator: { postgres: false } });
    await h.start();
  });
  afterAll(async () => {
    await h?.stop();
  });

  it("reads the project, its branch list and the password: the URI's host names the default endpoint", async () => {
    const tenant = await tenantProject(h, "tenant-1");
    const sent = requests(h.emulator);
    const obj = await adopt(h, "tenant-1", tenant.id);
    expect(obj.status).toMatchObject({
      projectId: tenant.id,
      defaultBranchId: tenant.branchId,
      defaultEndpointId: tenant.endpoint.id,
      defaultEndpointHost: tenant.endpoint.host,
    });
    // The project itself is read once, alone or from the account's list (as many tenants share).
    const read = (r: string) => r === "GET /projects" || r === "GET /projects/:project_id";
    expect(sent.sent(read)).toHaveLength(1);
    expect(sent.sent((r) => !read(r)).sort()).toEqual([
      "GET /projects/:project_id/branches",
      "GET /projects/:project_id/connection_uri",
    ]);
    const data = await secretData(h, "tenant-1-db");
    expect(data).toMatchObject({
      PGHOST: tenant.endpoint.host,
      PGUSER: "neondb_owner",
      PGDATABASE: "neondb",
    });
    expect(new URL(data.DATABASE_URL_POOLED ?? "").hostname).toBe(pooledHost(tenant.endpoint));
  });
});

describe("adopting a project whose connection URI names a local Postgres", () => {
  let h: OperatorHarness;
  beforeAll(async () => {
    h = await startOperatorHarness(factory, { prefix: "adopt-pg" });
    await h.start();
  });
  afterAll(async () => {
    await h?.stop();
  });

  it("lists the endpoints for the default endpoint, and writes a Secret that connects", async () => {
    const tenant = await tenantProject(h, "tenant-2");
    const sent = requests(h.emulator);
    const obj = await adopt(h, "tenant-2", tenant.id);
    expect(obj.status).toMatchObject({
      defaultBranchId: tenant.branchId,
      defaultEndpointId: tenant.endpoint.id,
      defaultEndpointHost: tenant.endpoint.host,
    });
    expect(sent.sent((r) => r.startsWith("GET /projects/:project_id/")).sort()).toEqual([
      "GET /projects/:project_id/branches",
      "GET /projects/:project_id/connection_uri",
      "GET /projects/:project_id/connection_uri",
      "GET /projects/:project_id/endpoints",
    ]);
    const client = new pg.Client({ connectionString: (await secretData(h, "tenant-2-db")).DATABASE_URL });
    await client.connect();
    try {
      expect((await client.query<{ one: number }>("select 1 as one")).rows).toEqual([{ one: 1 }]);
    } finally {
      await client.end();
    }
  });
});
