import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PlatformClient } from "./client.ts";
import { isFailed, isRetrying, isSettled, summarizeOperations } from "./operations.ts";
import type { Operation } from "./schemas.ts";
import { startPlatform, type TestPlatform } from "../../test/support/platform/platform.ts";

const operation = (status: string, extra: Partial<Operation> = {}): Operation => ({
  id: `op-${status}`,
  projectId: "shop",
  branchId: "b1",
  endpointId: "ep-1",
  action: "start_compute",
  status,
  failuresCount: 0,
  createdAt: "2026-11-22T10:00:00.000Z",
  updatedAt: "2026-11-22T10:00:02.000Z",
  error: undefined,
  retryAt: undefined,
  totalDurationMs: undefined,
  ...extra,
});

describe("operation statuses as the platform's operations guide defines them", () => {
  it("a failed operation the platform will retry is not final: the change still runs", () => {
    const retried = operation("failed", { failuresCount: 2, retryAt: "2026-11-22T10:00:10.000Z" });
    expect(isRetrying(retried)).toBe(true);
    expect(isSettled(retried)).toBe(false);
    expect(isFailed(retried)).toBe(false);
    const outcome = summarizeOperations([retried], 5_000);
    expect(outcome).toMatchObject({ state: "running", retrying: [retried], failuresCount: 2 });
  });

  it("error and cancelled are a failed change; finished and skipped a done one", () => {
    for (const status of ["error", "cancelled"]) {
      expect(summarizeOperations([operation(status)], 5_000).state).toBe("failed");
    }
    for (const status of ["finished", "skipped"]) {
      expect(summarizeOperations([operation(status)], 5_000).state).toBe("finished");
    }
    for (const status of ["scheduling", "running", "cancelling"]) {
      expect(summarizeOperations([operation(status)], 5_000).state).toBe("running");
    }
  });

  it("a failed operation without retry_at was not scheduled again: a failed change", () => {
    expect(summarizeOperations([operation("failed", { failuresCount: 1 })], 5_000)).toMatchObject({
      state: "failed",
      failuresCount: 1,
    });
  });
});

describe("a tolerant reader of the platform's answers", () => {
  let platform: TestPlatform;
  let client: PlatformClient;

  beforeAll(async () => {
    // A platform past the sunset of its deprecated fields; a DELETE of an endpoint gone answers 204.
    platform = await startPlatform({
      dropDeprecatedFields: true,
      operationDurationMs: 20,
      seed: { projects: [{ id: "shop", name: "shop", branches: [{ id: "b1", name: "b1" }] }] },
    });
    client = platform.client();
  });
  afterAll(() => platform.close());

  it("creates and lists endpoints whose deprecated fields are missing", async () => {
    const created = await client.createEndpoint("shop", { branchId: "b1", type: "read_write" });
    await client.waitForOperations("shop", created.operations, { pollIntervalMs: 20, timeoutMs: 5_000 });
    const endpoint = (await client.listEndpoints("shop")).find((e) => e.branchId === "b1");
    expect(endpoint).toMatchObject({ id: created.endpoint.id, currentState: "active" });
    expect(endpoint!.poolerEnabled).toBeUndefined();
    expect(endpoint!.poolerMode).toBeUndefined();
  });

  it("takes a 204 without a body to a DELETE as done, and the endpoint leaves the project's snapshot", async () => {
    const endpoint = (await client.snapshot("shop", { maxAgeMs: 0 })).find((e) => e.branchId === "b1");
    const id = endpoint!.id;
    // Someone else deletes it first.
    const other = platform.client();
    const deleted = await other.deleteEndpoint("shop", id);
    await other.waitForOperations("shop", deleted?.operations ?? [], {
      pollIntervalMs: 20,
      timeoutMs: 5_000,
    });
    const lists = await platform.served("GET /projects/:project_id/endpoints");
    expect(await client.deleteEndpoint("shop", id)).toBeUndefined();
    expect((await platform.requests()).at(-1)).toMatchObject({ method: "DELETE", status: 204 });
    // Known from the answer: the shared list drops it without a new list request.
    const after = await client.snapshot("shop", { maxAgeMs: 60_000 });
    expect(after.map((e) => e.id)).not.toContain(id);
    expect(await platform.served("GET /projects/:project_id/endpoints")).toBe(lists);
  });
});

describe("operations the platform retries, on the emulator", () => {
  let platform: TestPlatform;
  let client: PlatformClient;

  beforeAll(async () => {
    platform = await startPlatform({
      operationDurationMs: 50,
      seed: { projects: [{ id: "shop", name: "shop", branches: [{ id: "b1", name: "b1" }] }] },
    });
    client = platform.client();
    const created = await client.createEndpoint("shop", { branchId: "b1", type: "read_write" });
    await client.waitForOperations("shop", created.operations, { pollIntervalMs: 20, timeoutMs: 5_000 });
    const suspended = await client.suspendEndpoint("shop", created.endpoint.id);
    await client.waitForOperations("shop", suspended.operations, { pollIntervalMs: 20, timeoutMs: 5_000 });
  });
  afterAll(() => platform.close());

  const endpointId = async () => (await client.listEndpoints("shop")).find((e) => e.branchId === "b1")!.id;

  it("a failed run with retry_at keeps the change running; the platform's retry finishes it", async () => {
    await platform.setFaults({
      operations: [{ action: "start_compute", times: 1, failures: 2, then: "finished", retry_delay_ms: 300 }],
    });
    const started = await client.startEndpoint("shop", await endpointId());
    const seen: string[] = [];
    let outcome = await client.waitForOperations("shop", started.operations, { pollIntervalMs: 20 });
    while (outcome.state === "running") {
      if (outcome.retrying.length > 0) seen.push(`retrying ${outcome.retrying[0]!.failuresCount}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
      outcome = await client.waitForOperations("shop", outcome.operations, { pollIntervalMs: 20 });
    }
    expect(outcome.state).toBe("finished");
    expect(outcome.operations[0]!.failuresCount).toBe(2);
    expect(seen).toContain("retrying 1");
    // No second change was sent: the platform retried its own operation.
    const starts = (await platform.requests()).filter(
      (r) => r.route === "POST /projects/:project_id/endpoints/:endpoint_id/start",
    );
    expect(starts).toHaveLength(1);
  });

  it("a failure that the platform makes final (error) is a failed change", async () => {
    await platform.setFaults({
      operations: [{ action: "start_compute", times: 1, failures: 1, then: "error", retry_delay_ms: 20 }],
    });
    const suspended = await client.suspendEndpoint("shop", await endpointId());
    await client.waitForOperations("shop", suspended.operations, { pollIntervalMs: 20, timeoutMs: 5_000 });
    const started = await client.startEndpoint("shop", await endpointId());
    const outcome = await client.waitForOperations("shop", started.operations, {
      pollIntervalMs: 20,
      timeoutMs: 5_000,
    });
    expect(outcome).toMatchObject({ state: "failed", failuresCount: 1 });
    if (outcome.state === "failed") expect(outcome.failed[0]!.status).toBe("error");
  });
});
