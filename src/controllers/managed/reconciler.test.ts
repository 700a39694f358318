// The managed layer itself, with a fake kind and no API server: each branch of the lifecycle and
// each row of the error table, as the conditions, events and retries a user would see.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  BadRequestError,
  LockedError,
  NotFoundError,
  OutcomeUnknownError,
  ProjectBusyError,
  RateLimitedError,
  UnauthorizedError,
  UnprocessableError,
  type Operation,
} from "../../platform/index.ts";
import { silentLogger, type Action, type Context, type KubeObject, type Store } from "../../runtime/index.ts";
import { CredentialsNotFoundError, PlatformAccess, secretKind } from "../credentials.ts";
import { Delay, Problem, describeFailure, notFound } from "./errors.ts";
import { ownerMark } from "./installation.ts";
import { ManagedReconciler } from "./reconciler.ts";
import type { Adapter, Answer, ManagedKind, ManagedObject, ManagedStatus, Pass, Step } from "./types.ts";

const Spec = z.object({
  projectId: z.string(),
  thingId: z.string().optional(),
  size: z.number().default(1),
  managementPolicy: z.enum(["Manage", "ObserveOnly"]).default("Manage"),
  deletionPolicy: z.enum(["Delete", "Orphan"]).default("Delete"),
  otherRef: z.string().optional(),
});
type Spec = z.infer<typeof Spec>;
interface Status extends ManagedStatus {
  thingId?: string | undefined;
  size?: number | undefined;
}
interface Thing {
  id: string;
  size: number;
}
type Resize = Step & { size: number };

const kindOf = { group: "test.dev", version: "v1", plural: "things", kind: "Thing" };
const otherKind = { group: "test.dev", version: "v1", plural: "others", kind: "Other" };

const running = (id: string): Operation => ({
  id,
  projectId: "p",
  branchId: undefined,
  endpointId: undefined,
  action: "apply_config",
  status: "running",
  failuresCount: 0,
  createdAt: "2026-11-25T00:00:00Z",
  updatedAt: "2026-11-25T00:00:00Z",
  error: undefined,
  retryAt: undefined,
  totalDurationMs: undefined,
});

/** What the fake platform holds and what the adapter was asked. */
class World {
  thing: Thing | undefined;
  sent: string[] = [];
  findError: Error | undefined;
  sendError: Error | undefined;
  deleteGone = false;
}

function adapter(
  world: World,
  extra: Partial<Adapter<Spec, Status, Thing, Resize>> = {},
): Adapter<Spec, Status, Thing, Resize> {
  const answer = (thing: Thing | undefined, ops: Operation[] = []): Answer<Thing, Status> => ({
    object: thing,
    operations: ops,
  });
  const send = (what: string) => {
    world.sent.push(what);
    if (world.sendError) throw world.sendError;
  };
  return {
    find: () => (world.findError ? Promise.reject(world.findError) : Promise.resolve(world.thing)),
    id: (t) => t.id,
    plan: (pass, t) =>
      !pass.deleting && t.size !== pass.spec.size
        ? {
            action: "Resize",
            reason: "Resizing",
            message: `resizing to ${pass.spec.size}`,
            size: pass.spec.size,
          }
        : undefined,
    create: (pass) => {
      send("create");
      world.thing = { id: "t-1", size: pass.spec.size };
      return Promise.resolve({ ...answer(world.thing), message: "created thing t-1" });
    },
    apply: (_pass, step) => {
      send(`resize ${step.size}`);
      world.thing = { id: world.thing?.id ?? "", size: step.size };
      return Promise.resolve(answer(world.thing, [running("op-1")]));
    },
    delete: (_pass, t) => {
      send(`delete ${t.id}`);
      if (world.deleteGone) return Promise.resolve("gone" as const);
      return Promise.resolve(answer(t));
    },
    status: (t) => ({ thingId: t.id, size: t.size }),
    ready: (t) => ["True", "Available", `thing ${t.id} is there`],
    ...extra,
  };
}

function kind(
  world: World,
  extra: Partial<Adapter<Spec, Status, Thing, Resize>> = {},
): ManagedKind<Spec, Status, Thing, Resize> {
  return {
    resource: { ...kindOf, apiVersion: "test.dev/v1" },
    finalizer: "test.dev/thing",
    spec: Spec,
    noun: "thing",
    reasonPrefix: "Thing",
    access: (spec) => ({ projectId: spec.projectId }),
    credentials: () => ({ secretName: "key", key: "apiKey" }),
    managementPolicy: (spec) => spec.managementPolicy,
    deletionPolicy: (spec) => spec.deletionPolicy,
    adopts: (spec) => spec.thingId,
    recorded: (status) => status.thingId,
    projectOf: (spec) => spec.projectId,
    references: [
      {
        field: "spec.otherRef",
        kind: otherKind,
        name: (spec) => spec.otherRef,
        id: (o) => (o as { status?: { id?: string } }).status?.id,
        fill: (spec) => spec,
      },
    ],
    adapter: adapter(world, extra),
  };
}

function store(objects: KubeObject[], index: Record<string, string[]> = {}): Store<KubeObject> {
  const byKey = new Map(objects.map((o) => [`${o.metadata.namespace}/${o.metadata.name}`, o]));
  return {
    get: (ns, name) => byKey.get(`${ns}/${name}`),
    getByKey: (key) => byKey.get(key),
    list: () => [...byKey.values()],
    byIndex: (name, value) => index[`${name}=${value}`] ?? [],
  };
}

const keySecret = {
  apiVersion: "v1",
  kind: "Secret",
  metadata: {
    name: "key",
    namespace: "ns",
    resourceVersion: "1",
    labels: { "neoncloud.dev/secret-type": "api-key" },
  },
  data: { apiKey: Buffer.from("k".repeat(64)).toString("base64") },
};

interface Run {
  action?: Action;
  error?: unknown;
  status: Status;
  events: string[];
  retry?: ReturnType<ManagedReconciler<Spec, Status, Thing, Resize>["errorPolicy"]>;
}

/** One pass of the reconciler (or of its cleanup) over `obj`, as the runtime would run it. */
async function pass(
  k: ManagedKind<Spec, Status, Thing, Resize>,
  obj: ManagedObject<Status>,
  options: {
    cleanup?: boolean;
    caches?: Record<string, Store<KubeObject>>;
    /** The operator's own key, in its namespace (default ops). */
    operatorKey?: boolean | string;
    grants?: boolean;
  } = {},
): Promise<Run> {
  const events: string[] = [];
  let current = obj;
  const caches: Record<string, Store<KubeObject>> = {
    [secretKind.plural]: store([
      keySecret,
      { ...keySecret, metadata: { ...keySecret.metadata, namespace: "ops" } },
    ]),
    [kindOf.plural]: store([obj]),
    [otherKind.plural]: store([]),
    ...options.caches,
  };
  const ctx = {
    kind: kindOf,
    client: { get: () => Promise.resolve(keySecret) },
    status: {
      patch: (o: ManagedObject<Status>, status: Record<string, unknown>) => {
        current = { ...o, status: status };
        return Promise.resolve(current);
      },
    },
    events: {
      normal: (reason: string) => events.push(`Normal ${reason}`),
      warning: (reason: string) => events.push(`Warning ${reason}`),
    },
    cache: (kind: { plural: string }) => caches[kind.plural] ?? store([]),
    log: silentLogger,
    signal: new AbortController().signal,
  } as unknown as Context<ManagedObject<Status>>;
  const access = new PlatformAccess({
    baseUrl: "http://127.0.0.1:9/api/v2",
    // The operator's own key, in its namespace: what a resource naming no credentials uses.
    ...(options.operatorKey
      ? {
          defaultCredentials: {
            namespace: typeof options.operatorKey === "string" ? options.operatorKey : "ops",
            name: "key",
            key: "apiKey",
          },
        }
      : {}),
  });
  const reconciler = new ManagedReconciler(k, { access, grants: options.grants });
  try {
    const action = options.cleanup
      ? await reconciler.cleanup(obj, ctx)
      : await reconciler.reconcile(obj, ctx);
    return { action, status: current.status ?? {}, events };
  } catch (error) {
    return { error, status: current.status ?? {}, events, retry: reconciler.errorPolicy(obj, error) };
  } finally {
    await access.close();
  }
}

function resource(
  spec: Partial<Spec> = {},
  status: Status = {},
  meta: Partial<KubeObject["metadata"]> = {},
): ManagedObject<Status> {
  return {
    apiVersion: "test.dev/v1",
    kind: "Thing",
    metadata: {
      name: "a",
      namespace: "ns",
      uid: "uid-a",
      generation: 1,
      creationTimestamp: "2026-11-25T00:00:01Z",
      ...meta,
    },
    spec: { projectId: "p", ...spec },
    status,
  };
}

const condition = (status: Status, type: string) => status.conditions?.find((c) => c.type === type);

describe("the managed lifecycle", () => {
  it("creates what it does not find, says so in an event and in Ready", async () => {
    const world = new World();
    const run = await pass(kind(world), resource());
    expect(world.sent).toEqual(["create"]);
    expect(run.events).toEqual(["Normal Created"]);
    expect(condition(run.status, "Ready")).toMatchObject({
      status: "False",
      reason: "Creating",
      message: "created thing t-1",
    });
    expect(run.status.thingId).toBe("t-1");
  });

  it("makes the one change plan names, and waits for its operations", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    const run = await pass(kind(world), resource({ size: 2 }, { thingId: "t-1" }));
    expect(world.sent).toEqual(["resize 2"]);
    expect(run.events).toEqual(["Normal Resizing"]);
    expect(condition(run.status, "Ready")).toMatchObject({ status: "False", reason: "Resizing" });
    expect(condition(run.status, "Reconciling")?.status).toBe("True");
    expect(run.status.operations?.map((o) => o.id)).toEqual(["op-1"]);
    expect(run.action?.requeueAfterMs).toBeGreaterThan(0);
  });

  it("reports Ready and sends nothing when the object is as declared", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    const run = await pass(kind(world), resource({}, { thingId: "t-1" }));
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")).toMatchObject({ status: "True", reason: "Available" });
    expect(condition(run.status, "Synced")).toMatchObject({ status: "True", reason: "Synced" });
  });

  it("as declared but not usable yet, it reads as work under way (Reconciling), not at rest", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    const starting = kind(world, { ready: (t) => ["False", "ThingState", `thing ${t.id} is starting`] });
    const run = await pass(starting, resource({}, { thingId: "t-1" }));
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")).toMatchObject({ status: "False", reason: "ThingState" });
    expect(condition(run.status, "Reconciling")?.status).toBe("True");
    expect(condition(run.status, "Stalled")).toBeUndefined();
  });

  it("observe-only reports and never changes", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    const run = await pass(
      kind(world),
      resource({ size: 2, thingId: "t-1", managementPolicy: "ObserveOnly" }),
    );
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")).toMatchObject({ status: "True", reason: "Observed" });
  });

  it.each<[string, Partial<Spec>, Status, Partial<Adapter<Spec, Status, Thing, Resize>>, string, string[]]>([
    ["an adopted id that does not exist", { thingId: "t-9" }, {}, {}, "ThingNotFound", []],
    [
      "a recorded object gone, which the kind does not recreate",
      {},
      { thingId: "t-1" },
      { vanished: () => new Problem("ThingDeleted", "deleted outside", { retry: "onChange" }) },
      "ThingDeleted",
      [],
    ],
  ])("is Stalled, sending nothing, for %s", async (_, spec, status, extra, reason, sent) => {
    const world = new World();
    const run = await pass(kind(world, extra), resource(spec, status));
    expect(world.sent).toEqual(sent);
    expect(condition(run.status, "Ready")?.reason).toBe(reason);
    expect(condition(run.status, "Stalled")?.status).toBe("True");
  });

  it("recreates a recorded object deleted outside, with a Warning", async () => {
    const world = new World();
    const run = await pass(kind(world), resource({}, { thingId: "t-0" }));
    expect(world.sent).toEqual(["create"]);
    expect(run.events).toEqual(["Warning ThingGone", "Normal Created"]);
  });

  it("a project that does not exist is Stalled (ProjectNotFound)", async () => {
    const world = new World();
    world.findError = new NotFoundError("no such project", {
      route: "GET /projects/{project_id}/things",
      status: 404,
    });
    const run = await pass(kind(world), resource());
    expect(condition(run.status, "Ready")?.reason).toBe("ProjectNotFound");
    expect(condition(run.status, "Stalled")?.status).toBe("True");
    expect(run.retry).toEqual({ kind: "retryAfter", ms: Delay.notFound, failure: true });
  });

  it("waits for a referenced resource, sending nothing", async () => {
    const world = new World();
    const run = await pass(kind(world), resource({ otherRef: "base" }));
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")).toMatchObject({
      reason: "WaitingForReference",
      message: "spec.otherRef: Other ns/base does not exist yet",
    });
  });

  it("refuses an object another resource holds, sending nothing, and naming it only in the same namespace", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    const holder = resource({}, { thingId: "t-1" }, { name: "holder", namespace: "other", uid: "uid-h" });
    const caches = { [kindOf.plural]: store([holder], { "claims=id:t-1": ["other/holder"] }) };
    const run = await pass(kind(world), resource({ size: 3, thingId: "t-1" }), { caches });
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")).toMatchObject({ reason: "AlreadyManaged" });
    expect(condition(run.status, "Ready")?.message).toContain("a resource in another namespace");
    expect(condition(run.status, "Stalled")?.status).toBe("True");
    // Its deletion leaves the object alone.
    const gone = await pass(kind(world), resource({ thingId: "t-1", deletionPolicy: "Delete" }), {
      cleanup: true,
      caches,
    });
    expect(world.sent).toEqual([]);
    expect(gone.action?.requeueAfterMs).toBeUndefined();
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
    await pass(kind(world), resource(spec, { thingId: "t-1" }), { cleanup: true });
    expect(world.sent).toEqual(sent);
  });

  it("after the platform accepted the deletion, comes back at once to see it gone (no fixed wait)", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    const run = await pass(kind(world), resource({}, { thingId: "t-1" }), { cleanup: true });
    expect(world.sent).toEqual(["delete t-1"]);
    expect(run.action?.requeueAfterMs).toBe(0);
  });

  it("releases the resource once the platform says it is gone", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    world.deleteGone = true;
    const run = await pass(kind(world), resource({}, { thingId: "t-1" }), { cleanup: true });
    expect(run.action?.requeueAfterMs).toBeUndefined();
  });

  it("does first what the deletion needs (plan), then deletes on the next pass", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    const unprotect = (p: Pass<Spec, Status>, t: Thing): Resize | undefined =>
      p.deleting && t.size !== 0
        ? { action: "Unprotect", reason: "Unprotecting", message: "unprotecting", size: 0 }
        : undefined;
    await pass(kind(world, { plan: unprotect }), resource({}, { thingId: "t-1" }), { cleanup: true });
    await pass(kind(world, { plan: unprotect }), resource({}, { thingId: "t-1" }), { cleanup: true });
    expect(world.sent).toEqual(["resize 0", "delete t-1"]);
  });
});

describe("what each failure means", () => {
  const route = { route: "POST /things", status: 0 };
  it.each<[string, unknown, string, boolean, ReturnType<typeof describeFailure>["retry"], boolean]>([
    [
      "a Problem of the kind",
      notFound("ThingNotFound", "gone"),
      "ThingNotFound",
      true,
      { after: Delay.notFound },
      false,
    ],
    [
      "a spec the platform refuses (400)",
      new BadRequestError("bad", route),
      "InvalidSpec",
      true,
      "onChange",
      false,
    ],
    [
      "a key the platform refuses (401)",
      new UnauthorizedError("no", route),
      "Unauthorized",
      true,
      { after: Delay.unauthorized },
      false,
    ],
    [
      "a refusal in the current state (422): backed off from seconds",
      new UnprocessableError("not now", route),
      "RefusedInCurrentState",
      false,
      { backoff: true, from: Delay.refusedFrom },
      false,
    ],
    [
      "a busy project (423): a wait, not a failure",
      new LockedError("busy", { ...route, retryAfterMs: 3_000 }),
      "WaitingForProject",
      false,
      { after: 3_000 },
      true,
    ],
    [
      "its turn in the gate: a wait",
      new ProjectBusyError("turn", { ...route, retryAfterMs: 2_000, projectId: "p" }),
      "WaitingForProject",
      false,
      { after: 2_000 },
      true,
    ],
    [
      "the rate limit (429)",
      new RateLimitedError("slow", { ...route, retryAfterMs: 1_000 }),
      "RateLimited",
      false,
      { after: 1_000 },
      false,
    ],
    [
      "a lost answer",
      new OutcomeUnknownError("lost", route),
      "OutcomeUnknown",
      false,
      { backoff: true },
      false,
    ],
    [
      "a credentials Secret not found",
      new CredentialsNotFoundError("no Secret"),
      "CredentialsNotFound",
      true,
      { after: Delay.secret },
      false,
    ],
    ["anything else", new Error("boom"), "ReconcileError", false, { backoff: true }, false],
  ])("%s", (_, err, reason, stalled, retry, waiting) => {
    expect(describeFailure(err)).toMatchObject({ reason, stalled, retry, waiting });
  });

  it("a failed change is Synced=False with the reason, and retried as the table says", async () => {
    const world = new World();
    world.sendError = new UnprocessableError("branch not ready yet", { route: "POST /things", status: 422 });
    const run = await pass(kind(world), resource());
    expect(condition(run.status, "Synced")).toMatchObject({
      status: "False",
      reason: "RefusedInCurrentState",
    });
    expect(condition(run.status, "Stalled")).toBeUndefined();
    expect(run.retry).toEqual({ kind: "backoff", fromMs: Delay.refusedFrom });
  });

  it("a busy project is no failure: Reconciling, no Synced=False, retried when its turn comes", async () => {
    const world = new World();
    world.sendError = new ProjectBusyError("its turn comes in 2 s", {
      route: "POST /things",
      status: 0,
      retryAfterMs: 2_000,
      projectId: "p",
    });
    const run = await pass(kind(world), resource());
    expect(condition(run.status, "Ready")?.reason).toBe("WaitingForProject");
    expect(condition(run.status, "Reconciling")?.status).toBe("True");
    expect(condition(run.status, "Synced")).toBeUndefined();
    expect(run.retry).toEqual({ kind: "retryAfter", ms: 2_000, failure: false });
  });
});

describe("the operator's default credentials", () => {
  const onOperatorKey = (world: World) => ({ ...kind(world), credentials: () => undefined });
  const grant = (projects: string[]) => ({
    apiVersion: "neoncloud.dev/v1alpha1",
    kind: "CredentialsGrant",
    metadata: { name: "team" },
    spec: { namespaces: ["ns"], projects },
  });

  it("are refused, nothing sent, in a namespace no CredentialsGrant names", async () => {
    const world = new World();
    const run = await pass(onOperatorKey(world), resource(), { operatorKey: true });
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")).toMatchObject({ reason: "NotGranted" });
    expect(condition(run.status, "Ready")?.message).toContain("CredentialsGrant");
    expect(condition(run.status, "Stalled")?.status).toBe("True");
  });

  it("are refused for a project the grant does not name", async () => {
    const world = new World();
    const caches = { credentialsgrants: store([grant(["other"])]) };
    const run = await pass(onOperatorKey(world), resource(), { operatorKey: true, caches });
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")?.reason).toBe("NotGranted");
  });

  it("in the resource's own namespace need no grant (a namespaced install's key is the namespace's own)", async () => {
    const world = new World();
    await pass(onOperatorKey(world), resource(), { operatorKey: "ns" });
    expect(world.sent).toEqual(["create"]);
  });

  it("serve only their own namespace where the installation may not read grants", async () => {
    const world = new World();
    const caches = { credentialsgrants: store([grant(["p"])]) };
    const run = await pass(onOperatorKey(world), resource(), { operatorKey: true, caches, grants: false });
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")?.message).toContain("set spec.credentials");
  });

  it("when never granted, a resource goes at once on deletion: it made nothing", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    const run = await pass(onOperatorKey(world), resource(), { operatorKey: true, cleanup: true });
    expect(run.action?.requeueAfterMs).toBeUndefined();
    expect(run.error).toBeUndefined();
    expect(world.sent).toEqual([]);
  });

  it("a resource holding an object waits for a grant before its deletion sends anything", async () => {
    const world = new World();
    world.thing = { id: "t-1", size: 1 };
    const run = await pass(onOperatorKey(world), resource({}, { thingId: "t-1" }), {
      operatorKey: true,
      cleanup: true,
    });
    expect(condition(run.status, "Ready")?.reason).toBe("NotGranted");
    expect(world.sent).toEqual([]);
  });

  it("act where a grant names the namespace and the project", async () => {
    const world = new World();
    const caches = { credentialsgrants: store([grant(["p"])]) };
    await pass(onOperatorKey(world), resource(), { operatorKey: true, caches });
    expect(world.sent).toEqual(["create"]);
  });
});

describe("owner marks on the platform", () => {
  const marked = (world: World) => kind(world, { markOf: (t) => (t as Thing & { mark?: string }).mark });
  const found = (world: World, mark: string) => {
    world.thing = { id: "t-1", size: 1, mark } as Thing;
  };

  it("an object another installation marked is refused, and never deleted", async () => {
    const world = new World();
    found(world, "k8s-ffffffff-0123456789abcdef");
    const run = await pass(marked(world), resource({ size: 2, thingId: "t-1" }));
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")?.message).toContain("another installation");
    await pass(marked(world), resource({ thingId: "t-1", deletionPolicy: "Delete" }), { cleanup: true });
    expect(world.sent).toEqual([]);
  });

  it("an object the mark of a live resource of this installation names is that resource's", async () => {
    const world = new World();
    const holder = resource({}, { thingId: "t-1" }, { name: "holder", uid: "uid-h" });
    const mark = ownerMark("00000000", "Thing", "ns", "holder");
    found(world, mark);
    const caches = { [kindOf.plural]: store([holder], { [`marks=${mark}`]: ["ns/holder"] }) };
    const run = await pass(marked(world), resource({ size: 2, thingId: "t-1" }), { caches });
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")).toMatchObject({ reason: "AlreadyManaged" });
    expect(condition(run.status, "Ready")?.message).toContain("Thing ns/holder");
  });

  it("an object marked by a resource of this installation that no longer exists may be adopted", async () => {
    const world = new World();
    found(world, ownerMark("00000000", "Thing", "ns", "gone"));
    await pass(marked(world), resource({ size: 2, thingId: "t-1" }));
    expect(world.sent).toEqual(["resize 2"]);
  });
});

describe("a project another kind made (a Project's), on the operator's default credentials", () => {
  const makerKind = { group: "test.dev", version: "v1", plural: "makers", kind: "Maker" };
  const made = (name: string, projectId: string, meta: Partial<KubeObject["metadata"]> = {}) => ({
    apiVersion: "test.dev/v1",
    kind: "Maker",
    metadata: { name, namespace: "ns", uid: `uid-${name}`, ...meta },
    status: { made: projectId },
  });
  /** The platform shows the project made by the maker `ns/maker` (its mark), and no other. */
  const onMade = (world: World, confirmed: string[]) => ({
    ...kind(world),
    credentials: () => undefined,
    projectMakers: [
      {
        kind: makerKind,
        created: (o: KubeObject) => (o as { status?: { made?: string } }).status?.made,
        confirm: (_client: unknown, projectId: string, mark: string) => {
          confirmed.push(projectId);
          return Promise.resolve(mark === ownerMark("00000000", "Maker", "ns", "maker"));
        },
      },
    ],
  });

  it.each<[string, KubeObject[], string[], string | undefined]>([
    ["is usable once the platform shows the maker's mark on it", [made("maker", "p")], ["create"], undefined],
    [
      "is not, when only a status says so (another resource's forged one)",
      [made("forger", "p")],
      [],
      "NotGranted",
    ],
    [
      "is not, once its maker is being deleted",
      [made("maker", "p", { deletionTimestamp: "2026-11-25T00:00:02Z" })],
      [],
      "NotGranted",
    ],
    ["is not, for another project", [made("maker", "other")], [], "NotGranted"],
  ])("%s", async (_, makers, sent, reason) => {
    const world = new World();
    const confirmed: string[] = [];
    const run = await pass(onMade(world, confirmed), resource(), {
      operatorKey: true,
      caches: { [makerKind.plural]: store(makers) },
    });
    expect(world.sent).toEqual(sent);
    expect(condition(run.status, "Ready")?.reason).toBe(reason ?? "Creating");
  });

  it("a reference still waiting is what the resource reports, before any grant is looked at", async () => {
    const world = new World();
    const run = await pass({ ...kind(world), credentials: () => undefined }, resource({ otherRef: "base" }), {
      operatorKey: true,
    });
    expect(world.sent).toEqual([]);
    expect(condition(run.status, "Ready")?.reason).toBe("WaitingForReference");
  });

  it("an object that is the project itself, adopted and missing, is not said to be missing from itself", async () => {
    const world = new World();
    const itself = { ...kind(world), projectOf: (spec: Spec) => spec.thingId };
    const run = await pass(itself, resource({ thingId: "t-9" }));
    expect(condition(run.status, "Ready")).toMatchObject({
      reason: "ThingNotFound",
      message: "thing t-9 not found",
    });
  });
});
