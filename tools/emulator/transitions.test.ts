// Each row of the contract's transition tables (compute endpoint and
// operation), as a scenario against the emulator over HTTP.
import { describe, expect, it } from "vitest";
import { branchesOf, startHarness, type Harness } from "../../test/emulator/harness.ts";

const P = "/projects/demo-project";

async function createEndpoint(h: Harness, branchId: string, extra: Record<string, unknown> = {}) {
  const res = await h.api("POST", `${P}/endpoints`, {
    endpoint: { branch_id: branchId, type: "read_write", ...extra },
  });
  expect(res.status).toBe(201);
  return res.body as {
    endpoint: { id: string };
    operations: { id: string; action: string; status: string }[];
  };
}

async function endpoint(h: Harness, id: string) {
  return (await h.api("GET", `${P}/endpoints/${id}`)).body.endpoint;
}

/** An endpoint created on `dev` and run to active. */
async function activeEndpoint(h: Harness, extra: Record<string, unknown> = {}) {
  const { dev } = await branchesOf(h);
  const created = await createEndpoint(h, dev!, extra);
  h.clock.advance(1000);
  return created.endpoint.id;
}

describe("compute endpoint transitions", () => {
  it("(none) → POST endpoints: init, pending active, with a running start_compute", async () => {
    const h = await startHarness();
    const { dev } = await branchesOf(h);
    const { endpoint: ep, operations } = await createEndpoint(h, dev!);
    expect(ep).toMatchObject({ current_state: "init", pending_state: "active" });
    expect(ep).not.toHaveProperty("last_active");
    expect(operations).toEqual([expect.objectContaining({ action: "start_compute", status: "running" })]);
    h.clock.advance(1000);
    expect(await endpoint(h, ep.id)).toMatchObject({
      current_state: "active",
      last_active: expect.any(String),
    });
  });

  it("active → idle after the autosuspend delay, with a suspend_compute operation", async () => {
    const h = await startHarness();
    const id = await activeEndpoint(h);
    h.clock.advance(299_000);
    expect((await endpoint(h, id)).current_state).toBe("active");
    h.clock.advance(1000);
    const ops = (await h.api("GET", `${P}/operations?limit=1`)).body.operations;
    expect(ops[0]).toMatchObject({ action: "suspend_compute", endpoint_id: id });
    h.clock.advance(1000);
    expect((await endpoint(h, id)).current_state).toBe("idle");
  });

  it("an endpoint with autosuspend disabled (-1) stays active", async () => {
    const h = await startHarness();
    const id = await activeEndpoint(h, { suspend_timeout_seconds: -1 });
    h.clock.advance(7 * 24 * 3600_000);
    expect((await endpoint(h, id)).current_state).toBe("active");
  });

  it("a custom autosuspend delay is honoured, and client activity postpones it", async () => {
    const h = await startHarness();
    const id = await activeEndpoint(h, { suspend_timeout_seconds: 60 });
    h.clock.advance(50_000);
    expect((await h.admin("POST", `/endpoints/${id}/connect`)).status).toBe(200);
    h.clock.advance(50_000);
    expect((await endpoint(h, id)).current_state).toBe("active");
    h.clock.advance(12_000);
    expect((await endpoint(h, id)).current_state).toBe("idle");
  });

  it("idle → active when a client connects, with a start_compute operation", async () => {
    const h = await startHarness();
    const [seeded] = (await h.api("GET", `${P}/endpoints`)).body.endpoints;
    expect(seeded.current_state).toBe("idle");
    const res = await h.admin("POST", `/endpoints/${seeded.id}/connect`);
    expect(res.body.operations).toEqual([
      expect.objectContaining({ action: "start_compute", status: "running" }),
    ]);
    h.clock.advance(1000);
    expect((await endpoint(h, seeded.id)).current_state).toBe("active");
  });

  it("idle → active on a start-endpoint call, with a start_compute operation", async () => {
    const h = await startHarness();
    const [seeded] = (await h.api("GET", `${P}/endpoints`)).body.endpoints;
    const res = await h.api("POST", `${P}/endpoints/${seeded.id}/start`);
    expect(res.status).toBe(200);
    expect(res.body.operations).toEqual([
      expect.objectContaining({ action: "start_compute", status: "running" }),
    ]);
    expect(res.body.endpoint).not.toHaveProperty("pending_state");
    h.clock.advance(1000);
    expect((await endpoint(h, seeded.id)).current_state).toBe("active");
  });

  it("idle → PATCH branch_id to a branch without endpoint: idle, pending idle, apply_config running + suspend_compute scheduling (then skipped)", async () => {
    const h = await startHarness();
    const { staging } = await branchesOf(h);
    const [seeded] = (await h.api("GET", `${P}/endpoints`)).body.endpoints;
    const res = await h.api("PATCH", `${P}/endpoints/${seeded.id}`, { endpoint: { branch_id: staging } });
    expect(res.status).toBe(200);
    expect(res.body.endpoint).toMatchObject({
      branch_id: staging,
      current_state: "idle",
      pending_state: "idle",
    });
    expect(res.body.operations).toEqual([
      expect.objectContaining({ action: "apply_config", status: "running" }),
      expect.objectContaining({ action: "suspend_compute", status: "scheduling" }),
    ]);
    h.clock.advance(2000);
    const ops = await Promise.all(
      res.body.operations.map(
        async (op: { id: string }) => (await h.api("GET", `${P}/operations/${op.id}`)).body,
      ),
    );
    // The compute is already suspended when its turn comes: the platform skips it (a success).
    expect(ops.map((o) => o.operation.status)).toEqual(["finished", "skipped"]);
  });

  it("idle → DELETE endpoint: removed, and the response lists no operations", async () => {
    const h = await startHarness();
    const [seeded] = (await h.api("GET", `${P}/endpoints`)).body.endpoints;
    const res = await h.api("DELETE", `${P}/endpoints/${seeded.id}`);
    expect(res.status).toBe(200);
    expect(res.body.operations).toEqual([]);
    expect(res.body.endpoint).not.toHaveProperty("pending_state");
    expect((await h.api("GET", `${P}/endpoints/${seeded.id}`)).status).toBe(404);
  });

  it("restart of an active endpoint is suspend then start", async () => {
    const h = await startHarness();
    const id = await activeEndpoint(h);
    const res = await h.api("POST", `${P}/endpoints/${id}/restart`);
    expect(res.body.operations).toEqual([
      expect.objectContaining({ action: "suspend_compute", status: "running" }),
      expect.objectContaining({ action: "start_compute", status: "scheduling" }),
    ]);
    h.clock.advance(2000);
    expect((await endpoint(h, id)).current_state).toBe("active");
  });

  it("suspend of an active endpoint makes it idle", async () => {
    const h = await startHarness();
    const id = await activeEndpoint(h);
    const res = await h.api("POST", `${P}/endpoints/${id}/suspend`);
    expect(res.body.operations).toEqual([expect.objectContaining({ action: "suspend_compute" })]);
    h.clock.advance(1000);
    expect(await endpoint(h, id)).toMatchObject({ current_state: "idle", suspended_at: expect.any(String) });
  });

  it("resizing an active endpoint restarts it; changing autosuspend does not", async () => {
    const h = await startHarness();
    const id = await activeEndpoint(h);
    const resize = await h.api("PATCH", `${P}/endpoints/${id}`, {
      endpoint: { autoscaling_limit_min_cu: 0.5, autoscaling_limit_max_cu: 4 },
    });
    expect(resize.body.operations.map((o: { action: string }) => o.action)).toEqual([
      "apply_config",
      "suspend_compute",
      "start_compute",
    ]);
    expect(resize.body.endpoint).toMatchObject({ pending_state: "active" });
    h.clock.advance(3000);
    const timeout = await h.api("PATCH", `${P}/endpoints/${id}`, {
      endpoint: { suspend_timeout_seconds: 3600 },
    });
    expect(timeout.body.operations.map((o: { action: string }) => o.action)).toEqual(["apply_config"]);
    expect(timeout.body.endpoint).toMatchObject({ current_state: "active", suspend_timeout_seconds: 3600 });
  });
});

describe("operation transitions", () => {
  it("(created) → scheduling or running, appearing in the response of the request", async () => {
    const h = await startHarness();
    const { dev } = await branchesOf(h);
    const { operations } = await createEndpoint(h, dev!);
    const [op] = operations;
    const read = await h.api("GET", `${P}/operations/${op!.id}`);
    expect(read.body.operation).toMatchObject({ id: op!.id, status: "running", failures_count: 0 });
  });

  it("scheduling or running → finished when the work completes", async () => {
    const h = await startHarness({ operationDurationMs: 5000 });
    const { dev } = await branchesOf(h);
    const { operations } = await createEndpoint(h, dev!);
    h.clock.advance(4999);
    expect((await h.api("GET", `${P}/operations/${operations[0]!.id}`)).body.operation.status).toBe(
      "running",
    );
    h.clock.advance(1);
    const done = (await h.api("GET", `${P}/operations/${operations[0]!.id}`)).body.operation;
    expect(done).toMatchObject({ status: "finished", total_duration_ms: 5000 });
  });
});
