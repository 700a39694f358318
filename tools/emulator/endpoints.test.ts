// Compute endpoint rules: defaults, one read-write endpoint per branch, size
// rules, host forms, and the fields each response shows.
import { describe, expect, it } from "vitest";
import { branchesOf, startHarness } from "../../test/emulator/harness.ts";

const P = "/projects/demo-project";

describe("compute endpoints", () => {
  it("a new endpoint gets every default of the contract", async () => {
    const h = await startHarness();
    const { dev } = await branchesOf(h);
    const res = await h.api("POST", `${P}/endpoints`, { endpoint: { branch_id: dev, type: "read_write" } });
    expect(res.status).toBe(201);
    expect(res.body.endpoint).toMatchObject({
      autoscaling_limit_min_cu: 1,
      autoscaling_limit_max_cu: 1,
      settings: { pg_settings: {} },
      pooler_enabled: false,
      pooler_mode: "transaction",
      disabled: false,
      passwordless_access: true,
      suspend_timeout_seconds: 0,
      region_id: "aws-us-east-2",
      proxy_host: "us-east-2.aws.neon.tech",
    });
    expect(res.body.endpoint.id).toMatch(/^ep-[a-z]+-[a-z]+-[0-9a-f]{8}$/);
    expect(res.body.endpoint.host).toBe(`${res.body.endpoint.id}.us-east-2.aws.neon.tech`);
  });

  it("pending_state shows on create and update responses only", async () => {
    const h = await startHarness();
    const { dev } = await branchesOf(h);
    const created = await h.api("POST", `${P}/endpoints`, {
      endpoint: { branch_id: dev, type: "read_write" },
    });
    const id = created.body.endpoint.id;
    expect(created.body.endpoint.pending_state).toBe("active");
    expect(
      (await h.api("GET", `${P}/endpoints`)).body.endpoints.every((e: object) => !("pending_state" in e)),
    ).toBe(true);
    expect((await h.api("GET", `${P}/endpoints/${id}`)).body.endpoint).not.toHaveProperty("pending_state");
    h.clock.advance(1000);
    const updated = await h.api("PATCH", `${P}/endpoints/${id}`, { endpoint: { name: "renamed" } });
    expect(updated.body.endpoint).toMatchObject({ name: "renamed", pending_state: "active" });
  });

  it("a branch has one read-write endpoint but may have several read-only ones", async () => {
    const h = await startHarness({ operationDurationMs: 0 });
    const { main } = await branchesOf(h);
    const second = await h.api("POST", `${P}/endpoints`, {
      endpoint: { branch_id: main, type: "read_write" },
    });
    expect(second.status).toBe(409);
    expect(second.body).toEqual({ code: "", message: expect.any(String), request_id: expect.any(String) });
    for (let i = 0; i < 2; i++) {
      const replica = await h.api("POST", `${P}/endpoints`, {
        endpoint: { branch_id: main, type: "read_only" },
      });
      expect(replica.status).toBe(201);
    }
    const onBranch = await h.api("GET", `${P}/branches/${main}/endpoints`);
    expect(onBranch.body.endpoints.map((e: { type: string }) => e.type).sort()).toEqual([
      "read_only",
      "read_only",
      "read_write",
    ]);
  });

  it.each([
    [0.25, 0.25, 201],
    [0.5, 8, 201],
    [8, 16, 201],
    [16, 16, 201],
    [18, 18, 201],
    [56, 56, 201],
    [0.25, 9, 400], // range wider than 8 CU
    [10, 18, 400], // autoscaling beyond 16 CU
    [19, 19, 400], // odd size above 16
    [58, 58, 400], // larger than the largest size
    [1.5, 2, 400], // not a size
    [4, 2, 400], // min above max
    [0.1, 1, 400], // below the smallest size
  ])("compute range %s..%s answers %s", async (min, max, status) => {
    const h = await startHarness();
    const { dev } = await branchesOf(h);
    const res = await h.api("POST", `${P}/endpoints`, {
      endpoint: {
        branch_id: dev,
        type: "read_write",
        autoscaling_limit_min_cu: min,
        autoscaling_limit_max_cu: max,
      },
    });
    expect(res.status).toBe(status);
  });

  it("only the project's own region is accepted", async () => {
    const h = await startHarness();
    const { dev } = await branchesOf(h);
    const body = (region: string) => ({
      endpoint: { branch_id: dev, type: "read_write", region_id: region },
    });
    expect((await h.api("POST", `${P}/endpoints`, body("aws-eu-central-1"))).status).toBe(400);
    expect((await h.api("POST", `${P}/endpoints`, body("aws-us-east-2"))).status).toBe(201);
  });

  it("moving an endpoint to a branch that already has one is refused and changes nothing", async () => {
    const h = await startHarness({ operationDurationMs: 0 });
    const { dev, main } = await branchesOf(h);
    const created = await h.api("POST", `${P}/endpoints`, {
      endpoint: { branch_id: dev, type: "read_write" },
    });
    const res = await h.api("PATCH", `${P}/endpoints/${created.body.endpoint.id}`, {
      endpoint: { branch_id: main },
    });
    expect(res.status).toBe(409);
    expect((await h.api("GET", `${P}/endpoints/${created.body.endpoint.id}`)).body.endpoint.branch_id).toBe(
      dev,
    );
  });

  it("unknown projects, endpoints and branches answer 404 with the error body", async () => {
    const h = await startHarness();
    for (const path of [
      "/projects/no-such-project/endpoints",
      `${P}/endpoints/ep-no-such-endpoint`,
      `${P}/branches/br-no-such-branch/endpoints`,
      `${P}/operations/00000000-0000-0000-0000-000000000000`,
      "/no/such/route",
    ]) {
      const res = await h.api("GET", path);
      expect(res.status, path).toBe(404);
      expect(res.body.message).toEqual(expect.any(String));
    }
  });

  it("a disabled endpoint cannot be started", async () => {
    const h = await startHarness({ operationDurationMs: 0 });
    const [seeded] = (await h.api("GET", `${P}/endpoints`)).body.endpoints;
    await h.api("PATCH", `${P}/endpoints/${seeded.id}`, { endpoint: { disabled: true } });
    expect((await h.api("POST", `${P}/endpoints/${seeded.id}/start`)).status).toBe(422);
    expect((await h.admin("POST", `/endpoints/${seeded.id}/connect`)).status).toBe(422);
  });
});
