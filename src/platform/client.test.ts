import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PlatformClient } from "./client.ts";
import { BadRequestError, NotFoundError, ResponseValidationError } from "./errors.ts";
import type { Operation } from "./schemas.ts";
import { generousBudget, startPlatform, type TestPlatform } from "../../test/support/platform/platform.ts";
import { startScriptedServer } from "../../test/support/platform/scripted-server.ts";

describe("the platform client speaks every route the operator needs", () => {
  let platform: TestPlatform;
  let client: PlatformClient;

  beforeAll(async () => {
    platform = await startPlatform({
      operationDurationMs: 50,
      seed: {
        projects: [
          {
            id: "shop",
            name: "shop",
            branches: [
              { id: "br-dev", name: "dev" },
              { id: "br-qa", name: "qa" },
            ],
          },
        ],
      },
    });
    client = platform.client();
  });
  afterAll(() => platform.close());

  it("creates, reads, changes, suspends, restarts and deletes a compute endpoint", async () => {
    const created = await client.createEndpoint("shop", {
      branchId: "br-dev",
      type: "read_write",
      autoscalingLimitMinCu: 0.25,
      autoscalingLimitMaxCu: 1,
      suspendTimeoutSeconds: 300,
      pgSettings: { work_mem: "4MB" },
      name: "orders-api",
    });
    expect(created.endpoint).toMatchObject({
      projectId: "shop",
      branchId: "br-dev",
      type: "read_write",
      autoscalingLimitMinCu: 0.25,
      autoscalingLimitMaxCu: 1,
      pgSettings: { work_mem: "4MB" },
      name: "orders-api",
      currentState: "init",
      pendingState: "active",
    });
    expect(created.operations.map((op) => op.action)).toContain("start_compute");
    const id = created.endpoint.id;
    const settle = async (operations: Operation[]) =>
      (await client.waitForOperations("shop", operations, { pollIntervalMs: 20, timeoutMs: 5_000 })).state;

    expect((await client.getEndpoint("shop", id)).host).toBe(created.endpoint.host);
    expect((await client.listEndpoints("shop")).map((e) => e.id)).toContain(id);
    const onBranch = (await client.listEndpoints("shop")).filter((e) => e.branchId === "br-dev");
    expect(onBranch.map((e) => e.id)).toEqual([id]);

    expect(await settle(created.operations)).toBe("finished");
    const updated = await client.updateEndpoint("shop", id, { autoscalingLimitMaxCu: 2 });
    expect(updated.endpoint.autoscalingLimitMaxCu).toBe(2);
    expect(await settle(updated.operations)).toBe("finished");

    const suspended = await client.suspendEndpoint("shop", id);
    expect(suspended.operations.map((op) => op.action)).toContain("suspend_compute");
    expect(await settle(suspended.operations)).toBe("finished");
    const started = await client.startEndpoint("shop", id);
    expect(await settle(started.operations)).toBe("finished");
    const restarted = await client.restartEndpoint("shop", id);
    expect(await settle(restarted.operations)).toBe("finished");

    const deleted = await client.deleteEndpoint("shop", id);
    expect(deleted?.endpoint.id).toBe(id);
    const gone = await client.getEndpoint("shop", id).catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(NotFoundError);
    expect(gone).toMatchObject({ status: 404 });
    // Every request carries an X-Request-ID; the platform echoes it, so an error names the request.
    const requestId = (gone as NotFoundError).requestId;
    expect(requestId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const served = await platform.requests(30);
    expect(served.find((r) => r.request_id === requestId)).toMatchObject({ status: 404 });
    expect(new Set(served.map((r) => r.request_id)).size).toBe(served.length);
  });

  it("pages through a project's operations newest first, and reads one by id", async () => {
    const first = await client.listOperationsPage("shop", { limit: 2 });
    const second = await client.listOperationsPage("shop", { limit: 2, cursor: first.cursor });
    const operations = [...first.operations, ...second.operations];
    expect(operations).toHaveLength(4);
    const times = operations.map((op) => op.createdAt);
    expect([...times].sort().reverse()).toEqual(times);
    expect(new Set(operations.map((op) => op.id)).size).toBe(4);
    const one = await client.getOperation("shop", operations[0]!.id);
    expect(one).toMatchObject({ id: operations[0]!.id, projectId: "shop", failuresCount: 0 });
  });

  it("creates, lists and revokes API keys", async () => {
    const created = await client.createApiKey("ci-deployer");
    expect(created.key).toMatch(/^[a-z0-9]{64}$/);
    expect((await client.listApiKeys()).map((k) => k.name)).toContain("ci-deployer");
    const revoked = await client.revokeApiKey(created.id);
    expect(revoked).toMatchObject({ id: created.id, revoked: true });
  });

  it("reports a spec the platform rejects as its 400, naming the field", async () => {
    const error = await client
      .createEndpoint("shop", { branchId: "br-qa", type: "read_write", autoscalingLimitMinCu: 0.1 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({ status: 400, route: "POST /projects/{project_id}/endpoints" });
    expect((error as Error).message).toContain("autoscaling_limit_min_cu");
  });
});

describe("a response that breaks the contract", () => {
  it("is a validation error naming the route and the field, and tolerates unknown fields", async () => {
    const server = await startScriptedServer(() => ({
      status: 200,
      body: { endpoints: [{ id: "ep-1", project_id: "p", brand_new_field: true }] },
    }));
    const client = new PlatformClient({
      baseUrl: server.baseUrl,
      apiKey: "k".repeat(64),
      budget: generousBudget(),
    });
    try {
      const error = await client.listEndpoints("p").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ResponseValidationError);
      expect(error).toMatchObject({ route: "GET /projects/{project_id}/endpoints" });
      expect((error as Error).message).toContain('field "endpoints.0.host"');
      expect((error as Error).message).not.toContain("brand_new_field");
    } finally {
      await client.close();
      await server.close();
    }
  });
});
