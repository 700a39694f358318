// A fake kind on the managed layer, with no API server and no platform: "things" of a "world" the
// test controls, so each branch of the lifecycle and each option shows as the conditions, events,
// retries and requests a user would see. Used by the layer's tests and its options' tests.
import { z } from "zod";
import type { PlatformClient } from "../../src/platform/index.ts";
import {
  silentLogger,
  type Action,
  type Context,
  type KubeObject,
  type Store,
} from "../../src/runtime/index.ts";
import { Access, secretKind } from "../../src/controllers/managed/credentials.ts";
import {
  managed,
  withReferences,
  withWaiting,
  type Managed,
  type Option,
  type Settled,
} from "../../src/controllers/managed/features.ts";
import type {
  Adapter,
  Answer,
  ManagedObject,
  ManagedStatus,
  Step,
} from "../../src/controllers/managed/kind.ts";
import { ManagedReconciler } from "../../src/controllers/managed/reconciler.ts";
import { Refusal } from "../../src/controllers/managed/refusal.ts";
import { platformRefusal } from "../../src/controllers/refusals.ts";

export const Spec = z.object({
  projectId: z.string(),
  thingId: z.string().optional(),
  size: z.number().default(1),
  managementPolicy: z.enum(["Manage", "ObserveOnly"]).default("Manage"),
  deletionPolicy: z.enum(["Delete", "Orphan"]).default("Delete"),
  otherRef: z.string().optional(),
  credentials: z.object({ secretName: z.string(), key: z.string() }).optional(),
  /** Acts with the operator's own key (no spec.credentials). */
  onOperatorKey: z.boolean().default(false),
});
export type Spec = z.infer<typeof Spec>;
export interface Status extends ManagedStatus {
  thingId?: string | undefined;
  size?: number | undefined;
  operations?: { id: string; status: string }[] | undefined;
}
export interface Thing {
  id: string;
  size: number;
  /** The owner mark the platform keeps on it. */
  mark?: string;
}
export type Resize = Step & { size: number };

export const thingKind = { group: "test.dev", version: "v1", plural: "things", kind: "Thing" };
export const otherKind = { group: "test.dev", version: "v1", plural: "others", kind: "Other" };

/** What the fake platform holds and what the kind's verbs were asked. */
export class World {
  thing: Thing | undefined;
  sent: string[] = [];
  observeError: Error | undefined;
  sendError: Error | undefined;
  deleteGone = false;
  /** The status of each operation the world started, by id. */
  operations = new Map<string, string>();
  /** What observe says when the recorded thing is gone (a kind that does not recreate). */
  vanished: Refusal | undefined;
  /** Observe answers the thing as not usable yet. */
  starting = false;
}

/** The fake kind's verbs: a thing that can be created, resized (starting an operation) and deleted. */
export function thingAdapter(world: World): Adapter<Spec, Status, Thing, Resize, PlatformClient> {
  const send = (what: string) => {
    world.sent.push(what);
    if (world.sendError) throw world.sendError;
  };
  return {
    observe: (pass) => {
      if (world.observeError) return Promise.reject(world.observeError);
      const thing = world.thing;
      if (!thing) {
        if (pass.status.thingId !== undefined && world.vanished && !pass.deleting) throw world.vanished;
        return Promise.resolve({ exists: false });
      }
      const resize = pass.deleting
        ? thing.size !== 0 && pass.obj.metadata.annotations?.unprotect === "yes"
          ? { action: "Unprotect", reason: "Unprotecting", message: "unprotecting", size: 0 }
          : undefined
        : thing.size !== pass.spec.size
          ? {
              action: "Resize",
              reason: "Resizing",
              message: `resizing to ${pass.spec.size}`,
              size: pass.spec.size,
            }
          : undefined;
      return Promise.resolve({
        exists: true,
        object: thing,
        id: thing.id,
        status: { thingId: thing.id, size: thing.size },
        ready: world.starting
          ? ["False", "ThingState", `thing ${thing.id} is starting`]
          : ["True", "Available", `thing ${thing.id} is there`],
        next: resize,
        marks: thing.mark === undefined ? undefined : { "neoncloud.dev/owner": thing.mark },
      });
    },
    create: (pass) => {
      send("create");
      world.thing = { id: "t-1", size: pass.spec.size };
      return Promise.resolve({
        status: { thingId: "t-1", size: pass.spec.size },
        message: "created thing t-1",
      });
    },
    update: (_pass, step) => {
      send(`resize ${step.size}`);
      world.thing = { id: world.thing?.id ?? "", size: step.size };
      world.operations.set("op-1", "running");
      const answer: Answer<Status> = {
        status: { size: step.size },
        operations: [{ id: "op-1", status: "running" }],
      };
      return Promise.resolve(answer);
    },
    delete: (_pass, t) => {
      send(`delete ${t.id}`);
      if (world.deleteGone) return Promise.resolve("gone" as const);
      return Promise.resolve({});
    },
  };
}

/** Waiting for the world's operations: running until the test says otherwise. */
function worldWaiting(world: World): Option<Spec, Status, PlatformClient> {
  return withWaiting({
    settle: (run): Promise<Settled<Status>> => {
      const ops = run.status.operations ?? [];
      const now = ops.map((op) => ({ id: op.id, status: world.operations.get(op.id) ?? op.status }));
      if (now.some((op) => op.status === "failed")) {
        throw new Refusal("OperationFailed", "transient", "operation op-1 failed", {
          status: { operations: now },
          warn: true,
        });
      }
      if (now.some((op) => op.status === "running")) {
        return Promise.resolve({
          state: "running",
          status: { operations: now },
          ready: ["False", "OperationsRunning", "waiting for op-1"],
          retryAfterMs: 1_000,
        });
      }
      return Promise.resolve({ state: "ended", status: { operations: now } });
    },
    record: (operations) => ({ operations: operations as Status["operations"] }),
    firstLook: () => 2_000,
    scope: (spec) => spec.projectId,
  });
}

/** The fake kind, with a reference to an Other and waiting for its operations, plus `options`. */
export function thing(
  world: World,
  ...options: Option<Spec, Status, PlatformClient>[]
): Managed<Spec, Status, Thing, Resize, PlatformClient> {
  return managed(
    {
      resource: { ...thingKind, apiVersion: "test.dev/v1" },
      finalizer: "test.dev/thing",
      spec: Spec,
      noun: "thing",
      reasonPrefix: "Thing",
      idField: "spec.thingId",
      policies: (spec) => ({
        management: spec.managementPolicy,
        deletion: spec.deletionPolicy,
        credentials: spec.onOperatorKey
          ? undefined
          : (spec.credentials ?? { secretName: "key", key: "apiKey" }),
        adopts: spec.thingId,
      }),
      placement: (spec) => ({ size: spec.size }),
      recorded: (status) => status.thingId,
      adapter: thingAdapter(world),
    },
    withReferences({
      field: "spec.otherRef",
      kind: otherKind,
      name: (spec) => spec.otherRef,
      id: (o) => (o as { status?: { id?: string } }).status?.id,
      fill: (spec) => spec,
    }),
    worldWaiting(world),
    ...options,
  );
}

/** A read-only store over `objects`; `index` answers byIndex(`name=value`). */
export function store(objects: KubeObject[], index: Record<string, string[]> = {}): Store<KubeObject> {
  const byKey = new Map(objects.map((o) => [`${o.metadata.namespace ?? ""}/${o.metadata.name}`, o]));
  return {
    get: (ns, name) => byKey.get(`${ns ?? ""}/${name}`),
    getByKey: (key) => byKey.get(key),
    list: (ns) => [...byKey.values()].filter((o) => ns === undefined || o.metadata.namespace === ns),
    byIndex: (name, value) => index[`${name}=${value}`] ?? [],
  };
}

export const keySecret = {
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

export interface Run {
  action?: Action;
  error?: unknown;
  status: Status;
  events: string[];
  retry?: ReturnType<ManagedReconciler<Spec, Status, Thing, Resize, PlatformClient>["errorPolicy"]>;
}

/** One pass of the reconciler (or of its cleanup) over `obj`, as the runtime would run it. */
export async function pass(
  m: Managed<Spec, Status, Thing, Resize, PlatformClient>,
  obj: ManagedObject<Status>,
  options: {
    cleanup?: boolean;
    caches?: Record<string, Store<KubeObject>>;
    /** The operator's own key, in its namespace (default ops). */
    operatorKey?: boolean | string;
  } = {},
): Promise<Run> {
  const events: string[] = [];
  let current = obj;
  const caches: Record<string, Store<KubeObject>> = {
    [secretKind.plural]: store([
      keySecret,
      { ...keySecret, metadata: { ...keySecret.metadata, namespace: "ops" } },
    ]),
    [thingKind.plural]: store([obj]),
    [otherKind.plural]: store([]),
    ...options.caches,
  };
  const ctx = {
    kind: thingKind,
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
    wake: () => undefined,
  } as unknown as Context<ManagedObject<Status>>;
  // The operator's own key, in its namespace: what a resource naming no credentials uses.
  const defaults = options.operatorKey
    ? {
        namespace: typeof options.operatorKey === "string" ? options.operatorKey : "ops",
        name: "key",
        key: "apiKey",
      }
    : undefined;
  const access = new Access<PlatformClient>(defaults, () => Promise.resolve({} as PlatformClient));
  const reconciler = new ManagedReconciler(m, { access, classify: platformRefusal });
  try {
    const action = options.cleanup
      ? await reconciler.cleanup(obj, ctx)
      : await reconciler.reconcile(obj, ctx);
    return { action, status: current.status ?? {}, events };
  } catch (error) {
    return { error, status: current.status ?? {}, events, retry: reconciler.errorPolicy(obj, error) };
  }
}

/** A Thing resource `ns/a` with `spec` over the defaults, its status, and metadata. */
export function resource(
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

export const condition = (status: Status, type: string) => status.conditions?.find((c) => c.type === type);
