import { createServer } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PlatformClient } from "./client.ts";
import {
  LockedError,
  NetworkError,
  OutcomeUnknownError,
  RateLimitedError,
  ServerError,
  UnauthorizedError,
} from "./errors.ts";
import { isSettled } from "./operations.ts";
import {
  fastRetry,
  generousBudget,
  startPlatform,
  type TestPlatform,
} from "../../test/support/platform/platform.ts";
import { startScriptedServer } from "../../test/support/platform/scripted-server.ts";

const LIST = "GET /projects/:project_id/endpoints";
const CREATE = "POST /projects/:project_id/endpoints";

describe("when the platform misbehaves", () => {
  let platform: TestPlatform;
  let client: PlatformClient;

  beforeAll(async () => {
    // Operations finish almost at once: a running one locks the project (423) for the next create.
    platform = await startPlatform({
      operationDurationMs: 5,
      seed: {
        projects: [
          {
            id: "shop",
            name: "shop",
            branches: ["b1", "b2", "b3", "b4", "b5", "b6"].map((id) => ({ id, name: id })),
          },
        ],
      },
    });
    client = platform.client();
  });
  afterAll(() => platform.close());
  const endpointsOn = async (branchId: string) =>
    (await client.listEndpoints("shop")).filter((e) => e.branchId === branchId);
  // Each scenario starts on a quiet project: a running operation would lock it (423) for the next.
  afterEach(async () => {
    await platform.setFaults({});
    const { operations } = await client.listOperationsPage("shop", { limit: 100 });
    const running = operations.filter((op) => !isSettled(op));
    await client.waitForOperations("shop", running, { pollIntervalMs: 5, timeoutMs: 5_000 });
  });

  it.each([
    { fault: "423 Locked", rule: { status: 423 as const } },
    { fault: "503 Service Unavailable", rule: { status: 503 as const } },
    { fault: "429 without Retry-After", rule: { status: 429 as const } },
    { fault: "500 Internal Server Error", rule: { status: 500 as const } },
    { fault: "connection resets", rule: { reset: true } },
  ])("a read rides out $fault", async ({ rule }) => {
    await platform.setFaults({
      requests: [{ method: "GET", route: "/projects/:project_id/endpoints", times: 2, ...rule }],
    });
    const before = await platform.served(LIST);
    const endpoints = await client.listEndpoints("shop");
    expect(endpoints.length).toBeGreaterThan(0);
    expect((await platform.served(LIST)) - before).toBe(3);
  });

  it("hands a lasting 423 storm back to the caller with a time to retry, instead of waiting it out", async () => {
    await platform.setFaults({ requests: [{ route: "/projects/:project_id/endpoints", status: 423 }] });
    const before = await platform.served(LIST);
    const error = await client.listEndpoints("shop").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockedError);
    expect(error).toMatchObject({
      status: 423,
    });
    // The 423 storm outlasted the inline retries: the caller requeues after this long.
    expect((error as LockedError).retryAfterMs).toBeGreaterThan(0);
    expect((await platform.served(LIST)) - before).toBe(4);

    const created = await client
      .createEndpoint("shop", { branchId: "b1", type: "read_write" })
      .catch((e: unknown) => e);
    expect(created).toBeInstanceOf(LockedError);
    await platform.setFaults({});
    expect(await endpointsOn("b1")).toEqual([]);
  });

  it.each([
    { fault: "503", status: 503 as const, branch: "b2" },
    { fault: "429", status: 429 as const, branch: "b3" },
    { fault: "423", status: 423 as const, branch: "b4" },
  ])("re-sends a create the platform refused with $fault, and creates exactly one endpoint", async (c) => {
    await platform.setFaults({
      requests: [{ method: "POST", route: "/projects/:project_id/endpoints", status: c.status, times: 1 }],
    });
    const before = await platform.served(CREATE);
    const created = await client.createEndpoint("shop", { branchId: c.branch, type: "read_write" });
    expect((await platform.served(CREATE)) - before).toBe(2);
    expect((await endpointsOn(c.branch)).map((e) => e.id)).toEqual([created.endpoint.id]);
  });

  it("reports a create whose response was lost as outcome unknown, and never sends it twice", async () => {
    await platform.setFaults({
      requests: [{ method: "POST", route: "/projects/:project_id/endpoints", lose_response: true, times: 1 }],
    });
    const before = await platform.served(CREATE);
    const error = await client
      .createEndpoint("shop", { branchId: "b5", type: "read_write" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect(error).toMatchObject({
      route: "POST /projects/{project_id}/endpoints",
    });
    expect((await platform.served(CREATE)) - before).toBe(1);
    // The platform did apply it: observing shows the endpoint, so the caller adopts it instead of creating again.
    expect(await endpointsOn("b5")).toHaveLength(1);
  });

  it.each([
    { fault: "a connection reset", rule: { reset: true } },
    { fault: "a 500", rule: { status: 500 as const } },
  ])("reports a create cut off by $fault as outcome unknown, not as failed", async ({ rule }) => {
    await platform.setFaults({
      requests: [{ method: "POST", route: "/projects/:project_id/endpoints", times: 1, ...rule }],
    });
    const before = await platform.served(CREATE);
    const error = await client
      .createEndpoint("shop", { branchId: "b6", type: "read_write" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect((await platform.served(CREATE)) - before).toBe(1);
    // Here the platform never applied it; only observing can tell the two cases apart.
    expect(await endpointsOn("b6")).toEqual([]);
  });

  it("hands back a lasting 429 on a mutation with a time to retry after a few bounded attempts", async () => {
    await platform.setFaults({
      requests: [{ method: "POST", route: "/projects/:project_id/endpoints", status: 429 }],
    });
    const before = await platform.served(CREATE);
    const error = await client
      .createEndpoint("shop", { branchId: "b6", type: "read_write" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error).toMatchObject({ status: 429 });
    expect((error as RateLimitedError).retryAfterMs).toBeGreaterThan(0);
    expect((await platform.served(CREATE)) - before).toBe(3);
  });

  it("gives up on a slow answer when the caller aborts: a read with the caller's reason, a mutation as outcome unknown", async () => {
    await platform.setFaults({ requests: [{ route: "/projects/:project_id/endpoints", latency_ms: 300 }] });
    const read = await client
      .listEndpoints("shop", { signal: AbortSignal.abort(new Error("reconcile cancelled")) })
      .catch((e: unknown) => e);
    expect(read).toMatchObject({ message: "reconcile cancelled" });
    const slow = new AbortController();
    const pending = client.createEndpoint(
      "shop",
      { branchId: "b6", type: "read_write" },
      { signal: slow.signal },
    );
    setTimeout(() => slow.abort(new Error("shutting down")), 50);
    expect(await pending.catch((e: unknown) => e)).toBeInstanceOf(OutcomeUnknownError);
  });

  it("retries a read whose answer outlasts the headers timeout, but reports such a create as outcome unknown", async () => {
    // undici checks headers timeouts on a coarse (about 1 s) timer, hence the long latency.
    const impatient = platform.client({ headersTimeoutMs: 50 });
    const slow = { route: "/projects/:project_id/endpoints", latency_ms: 2_500, times: 1 };
    await platform.setFaults({ requests: [{ method: "GET", ...slow }] });
    expect((await impatient.listEndpoints("shop")).length).toBeGreaterThan(0);
    await platform.setFaults({ requests: [{ method: "POST", ...slow }] });
    const error = await impatient
      .createEndpoint("shop", { branchId: "b6", type: "read_write" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect(error).toMatchObject({ code: "UND_ERR_HEADERS_TIMEOUT" });
  });

  it("turns a revoked key into 401 errors, and never writes a key into a log line or an error", async () => {
    const bootstrap = platform.client();
    const { id, key } = await bootstrap.createApiKey("operator");
    const operator = platform.client({ apiKey: key });
    expect((await operator.listEndpoints("shop")).length).toBeGreaterThan(0);
    await bootstrap.revokeApiKey(id);

    const error = await operator.listEndpoints("shop").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error).toMatchObject({
      status: 401,
      route: "GET /projects/{project_id}/endpoints",
    });
    expect((error as Error).message).toContain("401");

    expect(platform.logLines.length).toBeGreaterThan(5);
    for (const secret of [key, platform.emulator.bootstrapKey]) {
      for (const line of platform.logLines) expect(line).not.toContain(secret);
      expect(JSON.stringify(error)).not.toContain(secret);
      expect(String((error as Error).stack)).not.toContain(secret);
    }
  });
});

describe("when the platform is unreachable", () => {
  it("fails reads and mutations as network errors after retrying, never as outcome unknown", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as { port: number };
    await new Promise((resolve) => closed.close(resolve));
    const client = new PlatformClient({
      baseUrl: `http://127.0.0.1:${port}/api/v2`,
      apiKey: "k".repeat(64),
      budget: generousBudget(),
      retry: fastRetry,
    });
    try {
      const read = await client.listEndpoints("shop").catch((e: unknown) => e);
      expect(read).toBeInstanceOf(NetworkError);
      expect(read).toMatchObject({ code: "ECONNREFUSED" });
      expect((read as NetworkError).retryAfterMs).toBeGreaterThan(0);
      const create = await client
        .createEndpoint("shop", { branchId: "b", type: "read_write" })
        .catch((e: unknown) => e);
      expect(create).toBeInstanceOf(NetworkError);
      expect(create).not.toBeInstanceOf(OutcomeUnknownError);
    } finally {
      await client.close();
    }
  });
});

describe("a 429 that says when to come back", () => {
  let platform: TestPlatform;
  beforeAll(async () => {
    platform = await startPlatform();
  });
  afterAll(() => platform.close());

  it("is handed back at once with Retry-After as retryAfterMs when that is far away", async () => {
    await platform.setFaults({ requests: [{ route: "/api_keys", status: 429, retry_after_s: 30 }] });
    const client = platform.client({ retry: fastRetry });
    try {
      const before = await platform.served("GET /api_keys");
      const error = await client.listApiKeys().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RateLimitedError);
      expect(error).toMatchObject({ retryAfterMs: 30_000 });
      expect((await platform.served("GET /api_keys")) - before).toBe(1);
    } finally {
      await client.close();
    }
  });

  it("is retried inline when Retry-After is short", async () => {
    await platform.setFaults({ requests: [{ route: "/api_keys", status: 429, retry_after_s: 0, times: 1 }] });
    const client = platform.client({ retry: fastRetry });
    try {
      const before = await platform.served("GET /api_keys");
      expect(Array.isArray(await client.listApiKeys())).toBe(true);
      expect((await platform.served("GET /api_keys")) - before).toBe(2);
    } finally {
      await client.close();
    }
  });
});

describe("a platform answer the emulator cannot give", () => {
  it("reports a 5xx on a read as a retryable server error once attempts run out", async () => {
    const server = await startScriptedServer(() => ({ status: 502, body: "bad gateway" }));
    const client = new PlatformClient({
      baseUrl: server.baseUrl,
      apiKey: "k".repeat(64),
      budget: generousBudget(),
      retry: fastRetry,
    });
    try {
      const error = await client.listApiKeys().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ServerError);
      expect(error).toMatchObject({ status: 502 });
      expect(server.received).toHaveLength(4);
    } finally {
      await client.close();
      await server.close();
    }
  });
});
