// When a resource looks at its change's operations: a change alone in its project is looked at
// when such operations have most likely ended and, if it ran late, again a short step later (not a
// poll interval); an end the project's lock proves is due for a look at once, and its outcome
// is read, never presumed (a failure frees the lock too); storms keep their batching. Against the emulator over HTTP, on a clock stepped by hand where times matter.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createManualClock } from "../../tools/emulator/clock.ts";
import type { PlatformClient } from "./client.ts";
import { LockBelief, OperationsTracker, waitForOperations } from "./operations.ts";
import type { Operation } from "./schemas.ts";
import { asAController, startPlatform, type TestPlatform } from "../../test/support/platform/platform.ts";

const LIST_OPERATIONS = "GET /projects/:project_id/operations";
const GET_OPERATION = "GET /projects/:project_id/operations/:operation_id";
const LIST_ENDPOINTS = "GET /projects/:project_id/endpoints";

/** Own times as durations.ts would have learned them: half of such end by 2 s, all by 2.5 s. */
const learned = (ops: readonly Operation[], share: number) => ops.length * (share >= 1 ? 2_500 : 2_000);

describe("looking at a change alone in its project", () => {
  // Emulated time on a whole second (the platform's timestamps have whole seconds).
  const clock = createManualClock(Date.UTC(2026, 10, 21, 10, 0, 0));
  let platform: TestPlatform;
  let client: PlatformClient;

  beforeAll(async () => {
    platform = await startPlatform({
      clock,
      // Later than all of those seen: the looks at half and at all of them both come early.
      operationDurationMs: 2_600,
      seed: { projects: [{ id: "shop", name: "shop", branches: [{ id: "b1", name: "b1" }] }] },
    });
    client = platform.client();
  });
  afterAll(() => platform.close());

  it("looks when half of such operations have ended, then when all have, then a short step later", async () => {
    const tracker = new OperationsTracker("shop", { now: () => clock.now(), endedBy: learned });
    const { operations } = await client.createEndpoint("shop", { branchId: "b1", type: "read_write" });
    const lists = async () => (await platform.served(LIST_OPERATIONS)) - before;
    const before = await platform.served(LIST_OPERATIONS);
    const look = () => waitForOperations(tracker, operations, { pollIntervalMs: 5_000, source: client });

    expect(tracker.firstLook(operations, 5_000)).toBe(2_000);
    clock.advance(2_000);
    const half = await look();
    expect(half).toMatchObject({ state: "running", nextLookMs: 500 });
    expect(await lists()).toBe(1);

    clock.advance(500);
    const all = await look();
    // Later than all of those seen: the shortest step, not the next 5 s poll tick.
    expect(all).toMatchObject({ state: "running", nextLookMs: 250 });
    expect(await lists()).toBe(2);

    clock.advance(250);
    expect((await look()).state).toBe("finished");
    expect(await lists()).toBe(3);
  });

  it("decides the first look by what else the project and the account are doing", () => {
    const operation = { id: "op-new", projectId: "shop", branchId: "b1", action: "start_compute" } as const;
    const running = [
      { ...operation, status: "running", createdAt: new Date(clock.now()).toISOString() },
    ] as Operation[];
    const firstLook = (options: ConstructorParameters<typeof OperationsTracker>[1]) =>
      new OperationsTracker("shop", { now: () => clock.now(), endedBy: learned, ...options }).firstLook(
        running,
        5_000,
      );
    // Alone: when half of such have ended; never seen to finish: after a guessed 1.5 s.
    expect(firstLook({})).toBe(2_000);
    expect(firstLook({ endedBy: () => undefined })).toBe(1_500);
    // The account's budget busy with other projects' changes: once, when all of such have ended;
    // unknown, on the poll grid (no guessing, each guess is a look).
    expect(firstLook({ storm: () => true })).toBe(2_500);
    expect(firstLook({ storm: () => true, endedBy: () => undefined })).toBeUndefined();
    // The project's changes wait for their turn: when the next should have been accepted (which
    // proves this one ended), at least a second away.
    const turn = (ms: number) => ({
      busy: () => true,
      nextTurnAt: () => clock.now() + ms,
      lock: new LockBelief(),
    });
    expect(firstLook(turn(2_400))).toBe(2_650);
    expect(firstLook(turn(100))).toBe(1_000);
    // ... unless the platform's lock is not believed to prove it: on the poll grid.
    expect(firstLook({ ...turn(2_400), lock: Object.assign(new LockBelief(), { projectWide: false }) })).toBe(
      undefined,
    );
  });
});

describe("ends the project's lock proves", () => {
  let platform: TestPlatform;

  beforeAll(async () => {
    platform = await startPlatform({
      lockScope: "project",
      operationDurationMs: 150,
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
  });
  afterAll(() => platform.close());

  const served = async () => ({
    list: await platform.served(LIST_OPERATIONS),
    get: await platform.served(GET_OPERATION),
  });
  let client: PlatformClient;

  beforeAll(async () => {
    // One change seen through: its duration is known, so the next ones are sent without a list.
    client = platform.client();
    const { operations } = await client.createEndpoint("shop", { branchId: "b5", type: "read_write" });
    await client.waitForOperations("shop", operations, { pollIntervalMs: 20, timeoutMs: 5_000 });
  });

  it("a change accepted after waiting in line proves the earlier one ended: the look at the later one reads both, and wakes the earlier one's caller", async () => {
    await client.snapshot("shop");
    const first = await client.createEndpoint("shop", { branchId: "b1", type: "read_write" });
    // The next two creates of the project wait for their turn (a line: a storm of the project),
    // each going when the one before should have ended.
    const [, second] = await Promise.all(
      [
        ["b2", "ns/b"],
        ["b6", "ns/c"],
      ].map(([branchId, ticket]) =>
        asAController(() =>
          client.createEndpoint("shop", { branchId: branchId!, type: "read_write" }, { ticket }),
        ),
      ),
    );
    const before = await served();
    const endpointLists = await platform.served(LIST_ENDPOINTS);
    // As a resource knows them, from its status: without their endpoint or branch.
    const fromStatus = first.operations.map((op) => ({ ...op, endpointId: undefined, branchId: undefined }));
    let woken = 0;
    // Proved ended, but in a storm not read on its own: answered as known, no request ...
    // (asked twice, as a resource's reconciles do while its project's line waits: woken once)
    const key = "computeendpoint/shop/a";
    const early = await client.waitForOperations("shop", fromStatus, { wake: { key, call: () => woken++ } });
    expect(early.state).toBe("running");
    const again = await client.waitForOperations("shop", fromStatus, { wake: { key, call: () => woken++ } });
    expect(again.state).toBe("running");
    expect(await served()).toEqual(before);
    // ... the look at the line's last change reads how it ended, and wakes its caller once.
    await client.waitForOperations("shop", second!.operations, { pollIntervalMs: 20, timeoutMs: 5_000 });
    const lookedAtBoth = await served();
    const outcome = await client.waitForOperations("shop", fromStatus);
    // Read from the platform, with its endpoint, and no request more.
    expect(outcome).toMatchObject({ state: "finished", operations: [{ endpointId: first.endpoint.id }] });
    expect(await served()).toEqual(lookedAtBoth);
    // The endpoint is in the state its answer announced, without an endpoint list.
    const shown = (await client.snapshot("shop", { maxAgeMs: 60_000 })).find(
      (e) => e.id === first.endpoint.id,
    );
    expect(shown?.currentState).toBe("active");
    expect(await platform.served(LIST_ENDPOINTS)).toBe(endpointLists);
  });

  it("an end it proved that was a failure is reported failed, never finished, and the endpoint not active", async () => {
    await client.snapshot("shop");
    await platform.setFaults({
      operations: [{ action: "start_compute", times: 1, failures: 1, then: "error", retry_delay_ms: 20 }],
    });
    const failing = await client.createEndpoint("shop", { branchId: "b3", type: "read_write" });
    // Accepted: the failing operation has ended (an error frees the lock too) ...
    const next = await asAController(() =>
      client.createEndpoint("shop", { branchId: "b4", type: "read_write" }, { ticket: "ns/d" }),
    );
    // ... but how is read (with the look at the next change): failed.
    await client.waitForOperations("shop", next.operations, { pollIntervalMs: 20, timeoutMs: 5_000 });
    const outcome = await client.waitForOperations("shop", failing.operations);
    expect(outcome).toMatchObject({ state: "failed", failed: [{ status: "error" }] });
    const shown = (await client.snapshot("shop", { maxAgeMs: 60_000 })).find(
      (e) => e.id === failing.endpoint.id,
    );
    expect(shown?.currentState).not.toBe("active");
  });
});

describe("a platform whose lock is not the project's", () => {
  let platform: TestPlatform;

  beforeAll(async () => {
    platform = await startPlatform({
      lockScope: "branch",
      operationDurationMs: 1_000,
      seed: {
        projects: [{ id: "shop", name: "shop", branches: ["b1", "b2"].map((id) => ({ id, name: id })) }],
      },
    });
  });
  afterAll(() => platform.close());

  it("a list that shows an end taken as proved still running ends the belief, and reports it running", async () => {
    // Without the gate the second change goes at once, and the branch lock accepts it.
    const client = platform.client({ mutationGate: false });
    const first = await client.createEndpoint("shop", { branchId: "b1", type: "read_write" });
    // Its resource looks (too early: answered as it knew it, no request): the project knows it runs.
    expect((await client.waitForOperations("shop", first.operations)).state).toBe("running");
    const second = await client.createEndpoint("shop", { branchId: "b2", type: "read_write" });
    // Taken as proved ended, so looked at now: the list shows it still running, as reported.
    expect((await client.waitForOperations("shop", first.operations)).state).toBe("running");
    expect(client.account.lock.projectWide).toBe(false);
    // Looks are timed again as without the lock's proofs.
    expect(client.project("shop").operations.nextLook(first.operations, 5_000)).not.toBe(250);
    await client.waitForOperations("shop", [...first.operations, ...second.operations], {
      pollIntervalMs: 50,
      timeoutMs: 5_000,
    });
  });
});

describe("proved ends while the project's changes wait for their turn", () => {
  const clock = createManualClock(Date.UTC(2026, 10, 21, 11, 0, 0));
  let platform: TestPlatform;
  let client: PlatformClient;

  beforeAll(async () => {
    platform = await startPlatform({
      clock,
      operationDurationMs: 1_000,
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
    client = platform.client({ mutationGate: false });
  });
  afterAll(() => platform.close());

  it("are read by one list for several, and each is reported as the platform ended it", async () => {
    const created: Operation[] = [];
    for (const branchId of ["b1", "b2", "b3", "b4", "b5"]) {
      created.push(...(await client.createEndpoint("shop", { branchId, type: "read_write" })).operations);
      clock.advance(1_500);
    }
    const [a, ...rest] = created as [Operation, ...Operation[]];
    const tracker = new OperationsTracker("shop", {
      now: () => clock.now(),
      endedBy: learned,
      busy: () => true,
      lock: new LockBelief(),
    });
    const lists = async () => (await platform.served(LIST_OPERATIONS)) - before;
    const before = await platform.served(LIST_OPERATIONS);
    const look = (ops: Operation[]) => tracker.refresh(ops, { pollIntervalMs: 5_000, source: client });

    // One end proved: not worth a list of its own yet; reported as the caller knew it.
    tracker.provedEnded([a.id], clock.now());
    expect((await look([a]))[0]!.status).toBe("running");
    expect(await lists()).toBe(0);
    // Five waiting: one list reads them all (in the background: a poll never waits while the
    // project's changes do).
    tracker.provedEnded(
      rest.map((op) => op.id),
      clock.now(),
    );
    expect((await look([a]))[0]!.status).toBe("running");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await look(created)).map((op) => op.status)).toEqual(created.map(() => "finished"));
    expect(await lists()).toBe(1);
  });
});

describe("a line of changes whose turns outlast a batch's wait", () => {
  let platform: TestPlatform;
  let client: PlatformClient;
  const branches = ["l0", "l1", "l2", "l3", "l4"];

  beforeAll(async () => {
    platform = await startPlatform({
      lockScope: "project",
      operationDurationMs: 150,
      seed: { projects: [{ id: "shop", name: "shop", branches: branches.map((id) => ({ id, name: id })) }] },
    });
    client = platform.client();
    // One change seen through, polled every 20 ms: five proved ends (five turns of about 150 ms)
    // would wait longer for a list than a poll does.
    const { operations } = await client.createEndpoint("shop", { branchId: "l0", type: "read_write" });
    await client.waitForOperations("shop", operations, { pollIntervalMs: 20, timeoutMs: 5_000 });
  });
  afterAll(() => platform.close());

  it("lists once before the turn that finds two proved ends unread: the list reads them and the running change's end, and the next change goes after it", async () => {
    const since = (await platform.requests(1000)).length;
    const first = await client.createEndpoint("shop", { branchId: "l1", type: "read_write" });
    const line = await Promise.all(
      ["l2", "l3", "l4"].map((branchId) =>
        asAController(() =>
          client.createEndpoint("shop", { branchId, type: "read_write" }, { ticket: `ns/${branchId}` }),
        ),
      ),
    );
    const sent = (await platform.requests(1000))
      .slice(since)
      .filter((r) => r.route === LIST_OPERATIONS || r.route === "POST /projects/:project_id/endpoints")
      .map((r) => (r.route === LIST_OPERATIONS ? "list" : `create ${r.status}`));
    // Two creates accepted after the first prove two ends; the third waits for one list, not a 423.
    expect(sent).toEqual(["create 201", "create 201", "create 201", "list", "create 201"]);
    // The earlier changes' outcomes are read: finished, with no request more.
    const before = await platform.served(LIST_OPERATIONS);
    const outcomes = await Promise.all(
      [first, line[0]!].map((change) => client.waitForOperations("shop", change.operations)),
    );
    expect(outcomes.map((o) => o.state)).toEqual(["finished", "finished"]);
    expect(await platform.served(LIST_OPERATIONS)).toBe(before);
  });
});
