import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PlatformClient } from "./client.ts";
import { OperationsTracker, waitForOperations } from "./operations.ts";
import type { Operation } from "./schemas.ts";
import { startPlatform, type TestPlatform } from "../../test/support/platform/platform.ts";

const LIST_ENDPOINTS = "GET /projects/:project_id/endpoints";
const LIST_OPERATIONS = "GET /projects/:project_id/operations";
const GET_OPERATION = "GET /projects/:project_id/operations/:operation_id";
const branches = ["b1", "b2", "b3", "b4", "b5", "b6"];

describe("batching for scale", () => {
  let platform: TestPlatform;
  let client: PlatformClient;

  beforeAll(async () => {
    platform = await startPlatform({
      operationDurationMs: 100,
      seed: {
        projects: [
          { id: "shop", name: "shop", branches: branches.map((id) => ({ id, name: id })) },
          { id: "blog", name: "blog" },
        ],
      },
    });
    client = platform.client();
  });
  afterAll(() => platform.close());

  /** The endpoint on a branch (one each, made by the tests before). */
  const endpointOn = async (branchId: string) =>
    (await client.listEndpoints("shop")).find((e) => e.branchId === branchId)!.id;

  it("serves 50 concurrent readers of one project with one list request", async () => {
    const before = await platform.served(LIST_ENDPOINTS);
    const views = await Promise.all(Array.from({ length: 50 }, () => client.snapshot("shop")));
    expect((await platform.served(LIST_ENDPOINTS)) - before).toBe(1);
    expect(new Set(views.map((v) => v.map((e) => e.id).join()))).toHaveLength(1);
    expect(views[0]!.length).toBeGreaterThan(0);
  });

  it("does not share a list between projects, and keeps a list current with its own changes", async () => {
    const client = platform.client();
    const before = await platform.served(LIST_ENDPOINTS);
    const [shop, blog] = await Promise.all([client.snapshot("shop"), client.snapshot("blog")]);
    expect(shop[0]!.projectId).toBe("shop");
    expect(blog[0]!.projectId).toBe("blog");

    const created = await client.createEndpoint("shop", { branchId: "b1", type: "read_write" });
    // The create's answer is recorded in the shared list: no list request after the change.
    const after = await client.snapshot("shop");
    expect(after.map((e) => e.id)).toContain(created.endpoint.id);
    expect((await platform.served(LIST_ENDPOINTS)) - before).toBe(2);
    // A reader that wants a fresh list gets one.
    await client.snapshot("shop", { maxAgeMs: 0 });
    expect((await platform.served(LIST_ENDPOINTS)) - before).toBe(3);
    await client.waitForOperations("shop", created.operations, { pollIntervalMs: 20, timeoutMs: 5_000 });
  });

  it("settles the operations of many resources with one list request", async () => {
    // Each create answers with operations still running; by the time the controller looks, they are done.
    const held: Operation[] = [];
    for (const branchId of branches.slice(1)) {
      const { operations } = await client.createEndpoint("shop", { branchId, type: "read_write" });
      expect(operations.every((op) => op.status === "running" || op.status === "scheduling")).toBe(true);
      held.push(...operations);
      await client.waitForOperations("shop", operations, { pollIntervalMs: 20, timeoutMs: 5_000 });
    }
    const before = {
      list: await platform.served(LIST_OPERATIONS),
      get: await platform.served(GET_OPERATION),
    };
    // A fresh client (a restarted operator) knows nothing of them yet.
    const outcome = await platform.client().waitForOperations("shop", held);
    expect(outcome.state).toBe("finished");
    expect(outcome.operations.map((op) => op.id)).toEqual(held.map((op) => op.id));
    expect((await platform.served(LIST_OPERATIONS)) - before.list).toBe(1);
    expect((await platform.served(GET_OPERATION)) - before.get).toBe(0);
  });

  it("serves resources that look one after another on the same poll tick with one list pass", async () => {
    const { operations: ops } = await client.listOperationsPage("shop", { limit: 5 });
    // A clock held inside one tick of the 5 s poll interval, so no tick boundary falls between
    // calls, and past the time the operations were due to have ended.
    let now = Math.ceil(Date.now() / 5_000) * 5_000 + 1_000;
    const tracker = new OperationsTracker("shop", { now: () => now });
    const before = await platform.served(LIST_OPERATIONS);
    // Sequential, not concurrent: past the batch window of each other.
    for (const op of ops) {
      const outcome = await waitForOperations(tracker, [{ ...op, status: "running" }], {
        pollIntervalMs: 5_000,
        source: client,
      });
      expect(outcome.state).toBe("finished");
      await new Promise((resolve) => setTimeout(resolve, 30));
      now += 100;
    }
    expect((await platform.served(LIST_OPERATIONS)) - before).toBe(1);
    // An end is final: on the next tick, what the pass saw still answers.
    now += 5_000;
    await waitForOperations(tracker, [{ ...ops[0]!, status: "running" }], {
      pollIntervalMs: 5_000,
      source: client,
    });
    expect((await platform.served(LIST_OPERATIONS)) - before).toBe(1);
  });

  it("when a change finishes, the snapshot shows the endpoint in the state its answer announced, without a new list", async () => {
    const reader = platform.client();
    await reader.snapshot("shop");
    const created = await reader.createEndpoint("shop", { branchId: "b1", type: "read_only" });
    expect(created.endpoint).toMatchObject({ currentState: "init", pendingState: "active" });
    const lists = await platform.served(LIST_ENDPOINTS);
    const outcome = await reader.waitForOperations("shop", created.operations, {
      pollIntervalMs: 20,
      timeoutMs: 5_000,
    });
    expect(outcome.state).toBe("finished");
    const seen = (await reader.snapshot("shop", { maxAgeMs: 60_000 })).find(
      (e) => e.id === created.endpoint.id,
    );
    expect(seen).toMatchObject({ currentState: "active" });
    expect(seen?.pendingState).toBeUndefined();
    expect((await platform.served(LIST_ENDPOINTS)) - lists).toBe(0);
    // And it is the truth: the platform says the same.
    const truth = (await reader.snapshot("shop", { maxAgeMs: 0 })).find((e) => e.id === created.endpoint.id);
    expect(truth?.currentState).toBe("active");
    // Suspend and start answers announce no pending_state, but their operations say the state
    // they leave (suspend_compute: idle, start_compute: active): no list either.
    const listsBefore = await platform.served(LIST_ENDPOINTS);
    for (const [change, state] of [
      [() => reader.suspendEndpoint("shop", created.endpoint.id), "idle"],
      [() => reader.startEndpoint("shop", created.endpoint.id), "active"],
    ] as const) {
      const { operations } = await change();
      await reader.waitForOperations("shop", operations, { pollIntervalMs: 20, timeoutMs: 5_000 });
      const shown = (await reader.snapshot("shop", { maxAgeMs: 60_000 })).find(
        (e) => e.id === created.endpoint.id,
      );
      expect(shown?.currentState).toBe(state);
    }
    expect((await platform.served(LIST_ENDPOINTS)) - listsBefore).toBe(0);
    const platformSays = (await reader.snapshot("shop", { maxAgeMs: 0 })).find(
      (e) => e.id === created.endpoint.id,
    );
    expect(platformSays?.currentState).toBe("active");
    const deleted = await reader.deleteEndpoint("shop", created.endpoint.id);
    await reader.waitForOperations("shop", deleted?.operations ?? [], {
      pollIntervalMs: 20,
      timeoutMs: 5_000,
    });
  });

  it("while the project's changes wait, polls are answered at once and list at most once per three poll intervals", async () => {
    let busy = true;
    // The tracker knows operations here last 100 ms; the polls come once it is due to have ended.
    const tracker = new OperationsTracker("shop", { busy: () => busy, endedBy: (ops) => ops.length * 100 });
    const { operations } = await client.suspendEndpoint("shop", await endpointOn("b2"));
    await new Promise((resolve) => setTimeout(resolve, 150));
    const before = await platform.served(LIST_OPERATIONS);
    // Answered at once, as the caller knew it; the list runs in the background.
    const first = await tracker.refresh(operations, { pollIntervalMs: 1_000, source: client });
    expect(first[0]).toBe(operations[0]);
    while ((await platform.served(LIST_OPERATIONS)) - before < 1) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // More polls within three poll intervals of that list: answered from it, no new list.
    for (let i = 0; i < 5; i++) await tracker.refresh(first, { pollIntervalMs: 1_000, source: client });
    expect((await platform.served(LIST_OPERATIONS)) - before).toBe(1);
    // As soon as the changes stop, a poll gets what that list saw (the operation had ended by
    // then, and an end is final): no other list.
    await new Promise((resolve) => setTimeout(resolve, 150));
    busy = false;
    const fresh = await tracker.refresh(first, { pollIntervalMs: 100, source: client });
    expect(fresh[0]!.status).toBe("finished");
    expect((await platform.served(LIST_OPERATIONS)) - before).toBe(1);
  });

  it("while the project's changes wait, polls before the operation is due to have ended make no list", async () => {
    const tracker = new OperationsTracker("shop", {
      busy: () => true,
      endedBy: (ops) => ops.length * 60_000,
    });
    const { operations } = await client.suspendEndpoint("shop", await endpointOn("b3"));
    const before = await platform.served(LIST_OPERATIONS);
    // A resource woken by its own status write right after its change: a list could only show it running.
    for (let i = 0; i < 3; i++) {
      const [seen] = await tracker.refresh(operations, { pollIntervalMs: 1, source: client });
      expect(seen).toBe(operations[0]);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect((await platform.served(LIST_OPERATIONS)) - before).toBe(0);
    await waitForOperations(new OperationsTracker("shop"), operations, {
      pollIntervalMs: 20,
      timeoutMs: 5_000,
      source: client,
    });
  });

  it("an operation that started later than this clock says (the platform's clock runs ahead) is looked at", async () => {
    // This replica's clock is a minute behind the platform's.
    const tracker = new OperationsTracker("shop", {
      now: () => Date.now() - 60_000,
      endedBy: (ops) => ops.length * 60_000,
    });
    const { operations } = await client.suspendEndpoint("shop", await endpointOn("b4"));
    const before = await platform.served(LIST_OPERATIONS);
    await tracker.refresh(operations, { pollIntervalMs: 1, source: client });
    expect((await platform.served(LIST_OPERATIONS)) - before).toBe(1);
    await waitForOperations(new OperationsTracker("shop"), operations, {
      pollIntervalMs: 20,
      timeoutMs: 5_000,
      source: client,
    });
  });

  it("reads by id an operation the list pass did not reach", async () => {
    const oldest = (await client.listOperationsPage("shop", { limit: 100 })).operations.at(-1);
    if (!oldest) throw new Error("the project has no operations");
    const tracker = new OperationsTracker("shop", { pageSize: 2 });
    const before = await platform.served(GET_OPERATION);
    // Known only by id, with no creation time to bound the pass: the tracker reads one page, then by id.
    const [latest] = await tracker.refresh([oldest.id], { source: client });
    expect(latest).toMatchObject({ id: oldest.id, status: "finished" });
    expect((await platform.served(GET_OPERATION)) - before).toBe(1);
  });

  it("reports running operations with the poll interval as the time to look again, then finished", async () => {
    const suspended = await client.suspendEndpoint("shop", await endpointOn("b1"));
    const once = await client.waitForOperations("shop", suspended.operations);
    expect(once).toMatchObject({ state: "running", retryAfterMs: 5_000, failuresCount: 0 });
    const done = await client.waitForOperations("shop", suspended.operations, {
      pollIntervalMs: 20,
      timeoutMs: 5_000,
    });
    expect(done.state).toBe("finished");
  });

  it("reports an operation that ended in error with its failures count", async () => {
    await platform.setFaults({
      operations: [{ action: "start_compute", times: 1, failures: 1, then: "error", retry_delay_ms: 20 }],
    });
    const started = await client.startEndpoint("shop", await endpointOn("b1"));
    const outcome = await client.waitForOperations("shop", started.operations, {
      pollIntervalMs: 20,
      timeoutMs: 5_000,
    });
    expect(outcome.state).toBe("failed");
    expect(outcome).toMatchObject({ failuresCount: 1 });
    if (outcome.state === "failed") expect(outcome.failed[0]!.status).toBe("error");
    if (outcome.state === "failed") expect(outcome.failed[0]!.action).toBe("start_compute");
  });
});
