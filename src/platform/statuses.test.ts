import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PlatformClient } from "./client.ts";
import { isFailed, isRetrying, isSettled, summarizeOperations } from "./operations.ts";
import type { Operation } from "./schemas.ts";
import { fastRetry, generousBudget } from "../../test/support/platform/platform.ts";
import { startScriptedServer, type ScriptedServer } from "../../test/support/platform/scripted-server.ts";

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

/** An endpoint as a platform answers once the deprecated pooler and passwordless fields are gone. */
const endpointWithoutDeprecated = {
  id: "ep-1",
  host: "ep-1.us-east-2.aws.neon.tech",
  project_id: "shop",
  branch_id: "b1",
  region_id: "aws-us-east-2",
  type: "read_write",
  autoscaling_limit_min_cu: 0.25,
  autoscaling_limit_max_cu: 1,
  current_state: "active",
  settings: {},
  disabled: false,
  created_at: "2026-11-22T10:00:00Z",
  updated_at: "2026-11-22T10:00:00Z",
  proxy_host: "us-east-2.aws.neon.tech",
};

describe("a tolerant reader of the platform's answers", () => {
  let server: ScriptedServer;
  let client: PlatformClient;

  beforeAll(async () => {
    // A platform that no longer sends deprecated fields, and answers 204 to a DELETE of an endpoint
    // already gone (the emulator of this branch cannot do either yet).
    server = await startScriptedServer((request) =>
      request.method === "DELETE"
        ? { status: 204, body: undefined }
        : { status: 200, body: { endpoints: [endpointWithoutDeprecated] } },
    );
    client = new PlatformClient({
      baseUrl: server.baseUrl,
      apiKey: "k".repeat(64),
      budget: generousBudget(),
      retry: fastRetry,
    });
  });
  afterAll(async () => {
    await client.close();
    await server.close();
  });

  it("lists endpoints whose deprecated fields are missing", async () => {
    const [endpoint] = await client.listEndpoints("shop");
    expect(endpoint).toMatchObject({ id: "ep-1", currentState: "active" });
    expect(endpoint!.poolerEnabled).toBeUndefined();
    expect(endpoint!.passwordlessAccess).toBeUndefined();
  });

  it("takes a 204 without a body to a DELETE as done, and the endpoint leaves the project's snapshot", async () => {
    expect((await client.snapshot("shop")).map((e) => e.id)).toEqual(["ep-1"]);
    const lists = server.received.filter((r) => r.method === "GET").length;
    expect(await client.deleteEndpoint("shop", "ep-1")).toBeUndefined();
    expect(await client.snapshot("shop")).toEqual([]);
    // Known from the answer: no new list was needed to see it gone.
    expect(server.received.filter((r) => r.method === "GET").length).toBe(lists);
  });
});
