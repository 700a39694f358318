// Every operation status of the platform's OpenAPI document, as a client sees
// them: a failed run retried by the platform (retry_at, failures_count) that
// ends finished or error, the rest of a chain cancelled after an error, and
// skipped operations. Each response is checked against the document.
import { describe, expect, it } from "vitest";
import { branchesOf, startHarness, type Harness } from "../../test/emulator/harness.ts";
import { responseErrors } from "../../test/emulator/openapi.ts";

const P = "/projects/demo-project";

/** An operation by id, validated against the document. */
async function operation(h: Harness, id: string) {
  const res = await h.api("GET", `${P}/operations/${id}`);
  expect(
    responseErrors("GET", "/projects/{project_id}/operations/{operation_id}", res.status, res.body),
  ).toEqual([]);
  return res.body.operation;
}

async function statuses(h: Harness, ids: string[]): Promise<string[]> {
  return Promise.all(ids.map(async (id) => (await operation(h, id)).status as string));
}

/** The seeded (idle) endpoint's id. */
async function seededEndpoint(h: Harness): Promise<string> {
  return (await h.api("GET", `${P}/endpoints`)).body.endpoints[0].id;
}

describe("operation statuses", () => {
  it("a failed run is retried by the platform at retry_at and ends finished; the project stays locked meanwhile", async () => {
    const h = await startHarness();
    const { dev } = await branchesOf(h);
    await h.admin("PUT", "/faults", {
      operations: [{ action: "start_compute", failures: 1, then: "finished", retry_delay_ms: 2000 }],
    });
    const id = await seededEndpoint(h);
    const started = await h.api("POST", `${P}/endpoints/${id}/start`);
    const opId = started.body.operations[0].id;
    h.clock.advance(1000);
    const failed = await operation(h, opId);
    expect(failed).toMatchObject({ status: "failed", failures_count: 1, error: expect.any(String) });
    // Timestamps are whole seconds, so the delay shows exactly when it is a whole number of seconds.
    expect(Date.parse(failed.retry_at) - Date.parse(failed.updated_at)).toBe(2000);
    // Not final: the project is still locked and the endpoint still on its way to active.
    const meanwhile = await h.api("POST", `${P}/endpoints`, {
      endpoint: { branch_id: dev, type: "read_only" },
    });
    expect(meanwhile.status).toBe(423);
    expect((await h.api("GET", `${P}/endpoints/${id}`)).body.endpoint.current_state).toBe("idle");
    h.clock.advance(2000);
    const retried = await operation(h, opId);
    expect(retried).toMatchObject({ status: "running", failures_count: 1 });
    expect(retried.retry_at).toBe(failed.retry_at); // now: when it was last retried
    h.clock.advance(1000);
    expect(await operation(h, opId)).toMatchObject({ status: "finished", failures_count: 1 });
    expect((await h.api("GET", `${P}/endpoints/${id}`)).body.endpoint.current_state).toBe("active");
    // The platform retried the same operation: no new one was created.
    const all = (await h.api("GET", `${P}/operations?limit=100`)).body.operations;
    expect(all.map((o: { id: string }) => o.id)).toEqual([opId]);
  });

  it("after the fault's number of failures the operation ends error, and the rest of its chain is cancelled", async () => {
    const h = await startHarness();
    const { dev } = await branchesOf(h);
    const created = await h.api("POST", `${P}/endpoints`, {
      endpoint: { branch_id: dev, type: "read_write" },
    });
    const id = created.body.endpoint.id;
    h.clock.advance(1000); // active now
    await h.admin("PUT", "/faults", {
      operations: [{ action: "apply_config", failures: 2, then: "error", retry_delay_ms: 1000 }],
    });
    // A new size restarts the compute: apply_config, suspend_compute, start_compute.
    const resized = await h.api("PATCH", `${P}/endpoints/${id}`, {
      endpoint: { autoscaling_limit_max_cu: 2 },
    });
    const ids = resized.body.operations.map((o: { id: string }) => o.id);
    expect(ids).toHaveLength(3);
    h.clock.advance(1000);
    expect(await statuses(h, ids)).toEqual(["failed", "scheduling", "scheduling"]); // successors wait
    h.clock.advance(1000);
    expect(await statuses(h, ids)).toEqual(["running", "scheduling", "scheduling"]);
    h.clock.advance(1000);
    expect(await operation(h, ids[0])).toMatchObject({ status: "error", failures_count: 2 });
    expect(await statuses(h, ids.slice(1))).toEqual(["cancelling", "cancelling"]);
    expect((await h.api("POST", `${P}/endpoints/${id}/restart`)).status).toBe(423);
    h.clock.advance(100);
    expect(await statuses(h, ids)).toEqual(["error", "cancelled", "cancelled"]);
    // The endpoint keeps its state, with nothing pending, and the project is free again.
    const endpoint = (await h.api("GET", `${P}/endpoints/${id}`)).body.endpoint;
    expect(endpoint.current_state).toBe("active");
    expect(endpoint.pending_state).toBeUndefined();
    expect((await h.api("POST", `${P}/endpoints/${id}/restart`)).status).toBe(200);
  });

  it("a fault of one failure that is final ends error at once, without a retry", async () => {
    const h = await startHarness();
    await h.admin("PUT", "/faults", { operations: [{ failures: 1, then: "error" }] });
    const id = await seededEndpoint(h);
    const started = await h.api("POST", `${P}/endpoints/${id}/start`);
    h.clock.advance(1000);
    const op = await operation(h, started.body.operations[0].id);
    expect(op).toMatchObject({ status: "error", failures_count: 1 });
    expect(op.retry_at).toBeUndefined();
    expect((await h.api("GET", `${P}/endpoints/${id}`)).body.endpoint.current_state).toBe("idle");
  });

  it("by default an operation fault fails once, is retried, and then ends error", async () => {
    const h = await startHarness();
    const set = await h.admin("PUT", "/faults", { operations: [{ times: 1 }] });
    expect(set.body.operations).toEqual([
      { rate: 1, times: 1, failures: 2, then: "error", retry_delay_ms: 1000 },
    ]);
    const id = await seededEndpoint(h);
    const opId = (await h.api("POST", `${P}/endpoints/${id}/start`)).body.operations[0].id;
    h.clock.advance(1000);
    expect(await operation(h, opId)).toMatchObject({ status: "failed", failures_count: 1 });
    h.clock.advance(2000);
    expect(await operation(h, opId)).toMatchObject({ status: "error", failures_count: 2 });
  });

  it("every status the emulator produces conforms in the operations list", async () => {
    const h = await startHarness();
    const { dev } = await branchesOf(h);
    await h.admin("PUT", "/faults", {
      operations: [{ action: "apply_config", failures: 2, then: "error", times: 1 }],
    });
    const created = await h.api("POST", `${P}/endpoints`, {
      endpoint: { branch_id: dev, type: "read_write" },
    });
    h.clock.advance(1000);
    await h.api("PATCH", `${P}/endpoints/${created.body.endpoint.id}`, {
      endpoint: { autoscaling_limit_max_cu: 2 },
    });
    const seen = new Set<string>();
    for (const step of [0, 1000, 1000, 1000, 100]) {
      h.clock.advance(step);
      const res = await h.api("GET", `${P}/operations?limit=100`);
      expect(responseErrors("GET", "/projects/{project_id}/operations", res.status, res.body)).toEqual([]);
      for (const op of res.body.operations) seen.add(op.status);
    }
    expect([...seen].sort()).toEqual([
      "cancelled",
      "cancelling",
      "error",
      "failed",
      "finished",
      "running",
      "scheduling",
    ]);
  });

  it.each([
    [{ failures: 0 }, /failures/],
    [{ then: "cancelled" }, /then/],
    [{ retry_delay_ms: -1 }, /retry_delay_ms/],
  ])("an operation fault %j is refused with 400 naming the field", async (fault, field) => {
    const h = await startHarness();
    const res = await h.admin("PUT", "/faults", { operations: [fault] });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(field);
  });
});
