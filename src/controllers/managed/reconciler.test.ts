// The managed layer itself, with a fake kind and no API server: each branch of the lifecycle, the
// claims and owner marks, and what a failure shows and how it is retried, as the conditions, events
// and retries a user would see.
import { describe, expect, it } from "vitest";
import { NotFoundError, ProjectBusyError, UnprocessableError } from "../../platform/index.ts";
import {
  World,
  condition,
  otherKind,
  pass,
  resource,
  store,
  thing,
  thingKind,
  type Spec,
  type Status,
} from "../../../test/support/managed-kind.ts";
import { withGrants } from "../access/grants.ts";
import { withClaims, withUses } from "./features.ts";
import { holdsIndex } from "./uses.ts";
import { ownerMark } from "./installation.ts";
import { Refusal } from "./refusal.ts";
import { KubeUnreachableError, isApiServerUnavailable } from "../../runtime/index.ts";

describe("the managed lifecycle", () => {
  it("creates what it does not find, says so in an event and in Ready", async () => {
    const world = new World();
    const run = await pass(thing(world), resource());
    expect(world.sent).toEqual(["create"]);
    expect(run.events).toEqual(["Normal Created"]);
    expect(condition(run.status, "Ready")).toMatchObject({
      status: "False",
      reason: "Creating",
      message: "created thing t-1",
    });
    expect(run.status.thingId).toBe("t-1");
  });

  it("makes the one change observe names, and waits for its operations", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    const run = await pass(thing(world), resource({ size: 2 }, { thingId: "t-1" }));
    expect(world.sent).toEqual(["resize 2"]);
    expect(run.events).toEqual(["Normal Resizing"]);
    expect(condition(run.status, "Ready")).toMatchObject({ status: "False", reason: "Resizing" });
    expect(condition(run.status, "Reconciling")?.status).toBe("True");
    expect(run.status.operations?.map((o) => o.id)).toEqual(["op-1"]);
    expect(run.action?.requeueAfterMs).toBe(2_000);
    // While they run, nothing is looked at or sent; once they end, it is as declared.
    const waiting = await pass(thing(world), resource({ size: 2 }, run.status));
    expect(waiting.action?.requeueAfterMs).toBe(1_000);
    world.operations.set("op-1", "finished");
    const done = await pass(thing(world), resource({ size: 2 }, run.status));
    expect(world.sent).toEqual(["resize 2"]);
    expect(condition(done.status, "Ready")?.status).toBe("True");
    expect(done.status.operations).toEqual([{ id: "op-1", status: "finished" }]);
  });

  it("a failed operation is Synced=False with a Warning, retried with backoff", async () => {
    const world = new World();
    world.operations.set("op-1", "failed");
    const run = await pass(
      thing(world),
      resource({}, { thingId: "t-1", operations: [{ id: "op-1", status: "running" }] }),
    );
    expect(condition(run.status, "Synced")).toMatchObject({ status: "False", reason: "OperationFailed" });
    expect(run.events).toEqual(["Warning OperationFailed"]);
    expect(run.status.operations).toEqual([{ id: "op-1", status: "failed" }]);
    expect(run.retry).toEqual({ kind: "backoff", fromMs: 3_000, maxMs: undefined });
  });

  it("reports Ready and sends nothing when the object is as declared", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    const run = await pass(thing(world), resource({}, { thingId: "t-1" }));
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")).toMatchObject({ status: "True", reason: "Available" });
    expect(condition(run.status, "Synced")).toMatchObject({ status: "True", reason: "Synced" });
  });

  it("as declared but not usable yet, it reads as work under way (Reconciling), not at rest", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    world.starting = true;
    const run = await pass(thing(world), resource({}, { thingId: "t-1" }));
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")).toMatchObject({ status: "False", reason: "ThingState" });
    expect(condition(run.status, "Reconciling")?.status).toBe("True");
    expect(condition(run.status, "Stalled")).toBeUndefined();
  });

  it("observe-only reports and never changes", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    const run = await pass(
      thing(world),
      resource({ size: 2, thingId: "t-1", managementPolicy: "ObserveOnly" }),
    );
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")).toMatchObject({ status: "True", reason: "Observed" });
  });

  it.each<[string, Partial<Spec>, Status, Refusal | undefined, string]>([
    ["an adopted id that does not exist", { thingId: "t-9" }, {}, undefined, "ThingNotFound"],
    [
      "a recorded object gone, which the kind does not recreate",
      {},
      { thingId: "t-1" },
      new Refusal("ThingDeleted", "spec", "deleted outside"),
      "ThingDeleted",
    ],
  ])("is Stalled, sending nothing, for %s", async (_, spec, status, vanished, reason) => {
    const world = new World();
    world.vanished = vanished;
    const run = await pass(thing(world), resource(spec, status));
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")?.reason).toBe(reason);
    expect(condition(run.status, "Stalled")?.status).toBe("True");
  });

  it("shows where it acts (its placement) from the first attempt on, a failed one included", async () => {
    const run = await pass(thing(new World()), resource({ size: 3, thingId: "t-9" }));
    expect(condition(run.status, "Ready")?.reason).toBe("ThingNotFound");
    expect(run.status.size).toBe(3);
    // What the platform shows wins over it.
    const world = new World();
    world.thing = { id: "t-1", size: 2 };
    const shown = await pass(
      thing(world),
      resource({ size: 3, managementPolicy: "ObserveOnly", thingId: "t-1" }),
    );
    expect(shown.status.size).toBe(2);
  });

  it("names the field of an adopted id that does not exist", async () => {
    const run = await pass(thing(new World()), resource({ thingId: "t-9" }));
    expect(condition(run.status, "Ready")?.message).toBe(
      "thing t-9 (spec.thingId) not found: make it, or name one that exists",
    );
  });

  it("recreates a recorded object deleted outside, with a Warning", async () => {
    const world = new World();
    const run = await pass(thing(world), resource({}, { thingId: "t-0" }));
    expect(world.sent).toEqual(["create"]);
    expect(run.events).toEqual(["Warning ThingGone", "Normal Created"]);
  });

  it("waits for a referenced resource, sending nothing", async () => {
    const world = new World();
    const run = await pass(thing(world), resource({ otherRef: "base" }));
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")).toMatchObject({
      reason: "WaitingForReference",
      message: "spec.otherRef: Other ns/base does not exist yet",
    });
  });

  it("refuses another id once it manages an object: an adopted id is fixed once set", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    const run = await pass(thing(world), resource({ thingId: "t-2" }, { thingId: "t-1" }));
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")).toMatchObject({ reason: "InvalidSpec" });
    expect(condition(run.status, "Ready")?.message).toContain("spec.thingId t-2 differs from thing t-1");
    expect(run.retry).toEqual({ kind: "onChange" });
    // The same id is the one it manages: fine.
    const same = await pass(thing(world), resource({ thingId: "t-1" }, { thingId: "t-1" }));
    expect(condition(same.status, "Ready")?.status).toBe("True");
  });

  it("refuses an object another resource holds, sending nothing, and naming it only in the same namespace", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    const holder = resource({}, { thingId: "t-1" }, { name: "holder", namespace: "other", uid: "uid-h" });
    const caches = { [thingKind.plural]: store([holder], { "claims=id:t-1": ["other/holder"] }) };
    const run = await pass(thing(world), resource({ size: 3, thingId: "t-1" }), { caches });
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")).toMatchObject({ reason: "AlreadyManaged" });
    expect(condition(run.status, "Ready")?.message).toContain("a resource in another namespace");
    expect(condition(run.status, "Ready")?.message).not.toContain("holder");
    expect(condition(run.status, "Stalled")?.status).toBe("True");
    // Its deletion leaves the object alone.
    const gone = await pass(thing(world), resource({ thingId: "t-1", deletionPolicy: "Delete" }), {
      cleanup: true,
      caches,
    });
    expect(world.sent).toEqual([]);
    expect(gone.action?.requeueAfterMs).toBeUndefined();
  });

  it("observe-only of an object another namespace's resource holds is refused: nothing of it is shown", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 7 };
    const holder = resource({}, { thingId: "t-1" }, { name: "holder", namespace: "other", uid: "uid-h" });
    const observer = resource(
      { thingId: "t-1", managementPolicy: "ObserveOnly" },
      {},
      { creationTimestamp: "2026-11-24T00:00:00Z" },
    );
    const caches = { [thingKind.plural]: store([holder, observer], { "claims=id:t-1": ["other/holder"] }) };
    const run = await pass(thing(world), observer, { caches });
    expect(condition(run.status, "Ready")).toMatchObject({ status: "False", reason: "NotShared" });
    expect(condition(run.status, "Ready")?.message).not.toContain("other/");
    expect(run.status.size).not.toBe(7);
    // Held in its own namespace: the namespace's own, observed.
    const local = resource({}, { thingId: "t-1" }, { name: "holder", uid: "uid-h" });
    const own = { [thingKind.plural]: store([local, observer], { "claims=id:t-1": ["ns/holder"] }) };
    const seen = await pass(thing(world), observer, { caches: own });
    expect(condition(seen.status, "Ready")).toMatchObject({ status: "True", reason: "Observed" });
  });

  it("withUses: what another namespace's resource holds is used only with its holder's consent, for that use", async () => {
    // The Thing attaches to its project; an Other in namespace team-a holds project p.
    const attaches = withUses<Spec, Status, never>({
      field: "spec.projectId",
      use: "Attach",
      noun: "project",
      id: (spec) => spec.projectId,
      holders: [
        {
          kind: otherKind,
          holds: () => ["p"],
          sharedWith: (o) =>
            (
              o as {
                spec?: { sharedWith?: { namespace: string; uses?: ("Observe" | "Attach" | "Derive")[] }[] };
              }
            ).spec?.sharedWith ?? [],
        },
      ],
    });
    const holderWith = (sharedWith: unknown[]) => ({
      ...resource({}, {}, { name: "holder", namespace: "team-a", uid: "uid-h" }),
      kind: "Other",
      spec: { sharedWith },
    });
    const caches = (holder: ReturnType<typeof holderWith>) => ({
      [otherKind.plural]: store([holder], { [`${holdsIndex(otherKind)}=p`]: ["team-a/holder"] }),
    });

    const world = new World();
    const refused = await pass(thing(world, attaches), resource(), { caches: caches(holderWith([])) });
    expect(world.sent).toEqual([]);
    expect(condition(refused.status, "Ready")).toMatchObject({ status: "False", reason: "NotShared" });
    expect(condition(refused.status, "Ready")?.message).toContain("spec.projectId: project p");
    expect(condition(refused.status, "Ready")?.message).not.toMatch(/team-a|holder\b(?! adds)/);
    // Shared for another use only: still refused.
    const derive = caches(holderWith([{ namespace: "ns", uses: ["Derive"] }]));
    await pass(thing(world, attaches), resource(), { caches: derive });
    expect(world.sent).toEqual([]);
    // Shared with this namespace for this use: created.
    const shared = caches(holderWith([{ namespace: "ns", uses: ["Attach"] }]));
    await pass(thing(world, attaches), resource(), { caches: shared });
    expect(world.sent).toEqual(["create"]);
  });

  it("refuses, before a create, what another resource claims first, in the kind's words", async () => {
    const world = new World();
    const claims = withClaims<Spec, Status, never>({
      of: (spec) => [`size:${spec.size}`],
      refused: (_spec, claim, rival) =>
        new Refusal("SizeTaken", "outside", `${rival ?? "another namespace's"} holds ${claim}`),
    });
    const rival = resource(
      {},
      {},
      { name: "first", namespace: "other", uid: "uid-f", creationTimestamp: "2026-11-24T00:00:00Z" },
    );
    const caches = { [thingKind.plural]: store([rival], { "claims=size:1": ["other/first"] }) };
    const run = await pass(thing(world, claims), resource(), { caches });
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")).toMatchObject({
      reason: "SizeTaken",
      message: "another namespace's holds size:1",
    });
  });
});

describe("the managed deletion", () => {
  it.each<[string, Partial<Spec>, string[]]>([
    ["Orphan keeps the object", { deletionPolicy: "Orphan" }, []],
    ["observe-only never deletes", { managementPolicy: "ObserveOnly", thingId: "t-1" }, []],
    ["Delete deletes it and comes back to see it gone", {}, ["delete t-1"]],
  ])("%s", async (_, spec, sent) => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    await pass(thing(world), resource(spec, { thingId: "t-1" }), { cleanup: true });
    expect(world.sent).toEqual(sent);
  });

  it("after the platform accepted the deletion, comes back at once to see it gone (no fixed wait)", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    const run = await pass(thing(world), resource({}, { thingId: "t-1" }), { cleanup: true });
    expect(world.sent).toEqual(["delete t-1"]);
    expect(run.action?.requeueAfterMs).toBe(0);
  });

  it("releases the resource once the platform says it is gone", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    world.deleteGone = true;
    const run = await pass(thing(world), resource({}, { thingId: "t-1" }), { cleanup: true });
    expect(run.action?.requeueAfterMs).toBeUndefined();
  });

  it("does first the change observe names for the deletion, then deletes on the next pass", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    const obj = resource({}, { thingId: "t-1" }, { annotations: { unprotect: "yes" } });
    await pass(thing(world), obj, { cleanup: true });
    await pass(thing(world), obj, { cleanup: true });
    expect(world.sent).toEqual(["resize 0", "delete t-1"]);
  });

  it.each<[string, Record<string, unknown>]>([
    ["its credentials Secret is missing", { credentials: { secretName: "missing", key: "apiKey" } }],
    ["the operator's key is not granted", { onOperatorKey: true }],
  ])("a resource refused before it made anything goes at once when %s", async (_, spec) => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    const granted = thing(
      world,
      withGrants<Spec, Status>((s) => ({ projectId: s.projectId }), { enabled: true }),
    );
    const refused = await pass(granted, resource(spec), { operatorKey: true });
    expect(condition(refused.status, "Stalled")?.status).toBe("True");
    const run = await pass(granted, resource(spec, refused.status), {
      operatorKey: true,
      cleanup: true,
    });
    expect(run.error).toBeUndefined();
    expect(run.action?.requeueAfterMs).toBeUndefined();
    expect(world.sent).toEqual([]);
  });

  it("a resource that holds an object waits for its credentials before its deletion sends anything", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    const spec = { credentials: { secretName: "missing", key: "apiKey" } };
    const run = await pass(thing(world), resource(spec, { thingId: "t-1" }), { cleanup: true });
    expect(condition(run.status, "Ready")?.reason).toBe("CredentialsNotFound");
    expect(world.sent).toEqual([]);
  });
});

describe("what a failure shows", () => {
  it("a refusal of the moment is Synced=False, not Stalled, retried with backoff from seconds", async () => {
    const world = new World();
    world.sendError = new UnprocessableError("branch not ready yet", { route: "POST /things", status: 422 });
    const run = await pass(thing(world), resource());
    expect(condition(run.status, "Synced")).toMatchObject({
      status: "False",
      reason: "RefusedInCurrentState",
    });
    expect(condition(run.status, "Stalled")).toBeUndefined();
    expect(run.retry).toEqual({ kind: "backoff", fromMs: 3_000, maxMs: undefined });
  });

  it("a busy project is no failure: Reconciling, no Synced=False, retried when its turn comes", async () => {
    const world = new World();
    world.sendError = new ProjectBusyError("its turn comes in 2 s", {
      route: "POST /things",
      status: 0,
      retryAfterMs: 2_000,
      projectId: "p",
    });
    const run = await pass(thing(world), resource());
    expect(condition(run.status, "Ready")?.reason).toBe("WaitingForProject");
    expect(condition(run.status, "Reconciling")?.status).toBe("True");
    expect(condition(run.status, "Synced")).toBeUndefined();
    expect(run.retry).toEqual({ kind: "retryAfter", ms: 2_000, failure: false });
  });

  it("no answer from the API server is no failure of the resource: left to the runtime to wait out", async () => {
    const world = new World();
    world.sendError = new KubeUnreachableError("PATCH /things/a/status: no answer from the API server");
    const run = await pass(thing(world), resource());
    // The runtime waits for the server and retries at once when it answers (outage.ts); read as a
    // refusal of the moment, each try would have doubled the resource's backoff instead.
    expect(isApiServerUnavailable(run.error)).toBe(true);
    expect(condition(run.status, "Synced")).toBeUndefined();
    expect(run.events).toEqual([]);
  });

  it("something missing outside is Stalled and looked at again up to every minute", async () => {
    const world = new World();
    world.observeError = new NotFoundError("no such project", { route: "GET /things", status: 404 });
    const run = await pass(thing(world), resource());
    expect(condition(run.status, "Stalled")?.status).toBe("True");
    expect(run.retry).toEqual({ kind: "backoff", fromMs: 5_000, maxMs: 60_000 });
  });
});

describe("owner marks on the platform", () => {
  const found = (world: World, mark: string) => {
    world.thing = { id: "t-1", size: 1, mark };
  };

  it("an object another installation marked is refused, and never deleted", async () => {
    const world = new World();
    found(world, "k8s-ffffffff-0123456789abcdef");
    const run = await pass(thing(world), resource({ size: 2, thingId: "t-1" }));
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")?.message).toContain("another installation");
    await pass(thing(world), resource({ thingId: "t-1", deletionPolicy: "Delete" }), { cleanup: true });
    expect(world.sent).toEqual([]);
  });

  it("an object the mark of a live resource of this installation names is that resource's", async () => {
    const world = new World();
    const holder = resource({}, { thingId: "t-1" }, { name: "holder", uid: "uid-h" });
    const mark = ownerMark("00000000", "Thing", "ns", "holder");
    found(world, mark);
    const caches = { [thingKind.plural]: store([holder], { [`marks=${mark}`]: ["ns/holder"] }) };
    const run = await pass(thing(world), resource({ size: 2, thingId: "t-1" }), { caches });
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")).toMatchObject({ reason: "AlreadyManaged" });
    expect(condition(run.status, "Ready")?.message).toContain("Thing ns/holder");
  });

  it("an object marked by a resource of this installation that no longer exists may be adopted", async () => {
    const world = new World();
    found(world, ownerMark("00000000", "Thing", "ns", "gone"));
    await pass(thing(world), resource({ size: 2, thingId: "t-1" }));
    expect(world.sent).toEqual(["resize 2"]);
  });
});
