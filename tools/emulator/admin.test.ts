// The admin API: shaping the world, watching what was served, resetting.
import { describe, expect, it } from "vitest";
import { startHarness } from "../../test/emulator/harness.ts";

describe("admin API", () => {
  it("a project added later has a primary branch whose read-write endpoint starts after create_timeline", async () => {
    const h = await startHarness();
    const added = await h.admin("POST", "/projects", { name: "shop", region_id: "aws-eu-central-1" });
    expect(added.status).toBe(201);
    const id = added.body.project.id;
    expect(id).toMatch(/^[a-z]+-[a-z]+-\d{8}$/);
    expect(
      added.body.operations.map((o: { action: string; status: string }) => [o.action, o.status]),
    ).toEqual([
      ["create_timeline", "running"],
      ["start_compute", "scheduling"],
    ]);
    const listed = (await h.api("GET", "/projects?limit=10")).body.projects.map((p: { id: string }) => p.id);
    expect(listed).toContain(id);
    h.clock.advance(2000);
    const [endpoint] = (await h.api("GET", `/projects/${id}/endpoints`)).body.endpoints;
    expect(endpoint).toMatchObject({
      type: "read_write",
      branch_id: added.body.branches[0].id,
      current_state: "active",
      host: expect.stringMatching(/\.eu-central-1\.aws\.neon\.tech$/),
    });
  });

  it("a branch added to a project has no endpoint and starts a create_branch operation", async () => {
    const h = await startHarness();
    const res = await h.admin("POST", "/projects/demo-project/branches", { name: "feature", parent: "dev" });
    expect(res.status).toBe(201);
    expect(res.body.operations).toEqual([expect.objectContaining({ action: "create_branch" })]);
    const branch = res.body.branch.id;
    expect(
      (await h.api("GET", `/projects/demo-project/branches/${branch}/endpoints`)).body.endpoints,
    ).toEqual([]);
    expect((await h.admin("POST", "/projects/no-such/branches", { name: "x" })).status).toBe(404);
  });

  it("the request log and counters show what was served, without any key value", async () => {
    const h = await startHarness();
    await h.api("GET", "/projects", undefined, { headers: { "x-request-id": "trace-1" } });
    await h.api("GET", "/projects/demo-project/endpoints/ep-missing");
    await h.api("GET", "/projects", undefined, { key: null });
    const log = (await h.admin("GET", "/requests")).body.requests;
    expect(log.map((e: { route: string; status: number }) => [e.route, e.status])).toEqual([
      ["GET /projects", 200],
      ["GET /projects/:project_id/endpoints/:endpoint_id", 404],
      ["GET /projects", 401],
    ]);
    expect(log[0].request_id).toBe("trace-1");
    expect(JSON.stringify(log)).not.toContain(h.emulator.bootstrapKey);
    const counters = (await h.admin("GET", "/counters")).body;
    expect(counters.by_route["GET /projects"]).toEqual({ "200": 1, "401": 1 });
    expect(counters.total).toBe(3);
  });

  it("reset brings back the seeded world and keeps the bootstrap key", async () => {
    const h = await startHarness();
    await h.admin("POST", "/projects", { name: "temporary" });
    await h.api("POST", "/api_keys", { key_name: "temporary" });
    await h.admin("PUT", "/faults", { requests: [{ route: "/api_keys", status: 500 }] });
    expect((await h.admin("POST", "/reset")).status).toBe(200);
    expect((await h.api("GET", "/projects")).body.projects.map((p: { name: string }) => p.name)).toEqual([
      "demo",
    ]);
    expect((await h.api("GET", "/api_keys")).body.map((k: { name: string }) => k.name)).toEqual([
      "bootstrap",
    ]);
    expect((await h.admin("GET", "/requests")).body.requests).toHaveLength(2);
  });

  it("projects page with limit and the last project id as cursor, and can be searched", async () => {
    const h = await startHarness();
    for (const name of ["alpha", "beta", "gamma"]) await h.admin("POST", "/projects", { name });
    const first = await h.api("GET", "/projects?limit=2");
    expect(first.body.projects).toHaveLength(2);
    expect(first.body.pagination.cursor).toBe(first.body.projects[1].id);
    const second = await h.api("GET", `/projects?limit=2&cursor=${first.body.pagination.cursor}`);
    const ids = [...first.body.projects, ...second.body.projects].map((p: { id: string }) => p.id);
    // In id order, every project once.
    expect(ids).toEqual([...ids].sort());
    const names = [...first.body.projects, ...second.body.projects].map((p: { name: string }) => p.name);
    expect(names.sort()).toEqual(["alpha", "beta", "demo", "gamma"]);
    const search = await h.api("GET", "/projects?search=gam");
    expect(search.body.projects.map((p: { name: string }) => p.name)).toEqual(["gamma"]);
  });
});
