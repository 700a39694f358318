// The ComputeEndpoint controller: a platform compute endpoint kept as its
// resource declares. Each pass observes the endpoint (through the project's
// shared snapshot), then does at most one thing: wait for running operations,
// create, update (one PATCH of the fields that differ, moves included),
// restart, suspend or start. Everything else (queueing, retries, finalizer)
// is the runtime's.
import {
  ComputeEndpointSpec,
  computeEndpointKind,
  type ComputeEndpointStatus,
  type EndpointOperation,
} from "../api/computeendpoint.ts";
import { observeIntervalAnnotation, restartedAtAnnotation } from "../api/group.ts";
import {
  ConflictError,
  NotFoundError,
  UnauthorizedError,
  type Endpoint,
  type EndpointMutation,
  type Operation,
  type OperationsOutcome,
  type PlatformClient,
} from "../platform/index.ts";
import {
  Action,
  Controller,
  TerminalError,
  objectKey,
  parseDuration,
  type ConditionStatus,
  type Context,
  type KubeObject,
  type Reconciler,
  type ResourceKind,
} from "../runtime/index.ts";
import {
  configMapKind,
  connectionData,
  publishConnection,
  type ConfigMap,
} from "./computeendpoint-connection.ts";
import { createSpec, creationName, difference, restartsEndpoint } from "./computeendpoint-desired.ts";
import {
  observedFields,
  operationsRunning,
  statusOperations,
  trackedOperations,
  withConditions,
  type Conditions,
} from "./computeendpoint-status.ts";
import { secretKind, type Secret } from "./credentials.ts";
import { resourceKind, type ControllerFactory, type KindControllerOptions } from "./options.ts";
import { describeFailure } from "./reasons.ts";

export interface ComputeEndpointObject extends KubeObject {
  spec: ComputeEndpointSpec;
  status?: ComputeEndpointStatus;
}

export const computeEndpointResourceKind: ResourceKind = resourceKind(computeEndpointKind);

export const computeEndpointFinalizer = "neoncloud.dev/computeendpoint";

/**
 * A failure whose reason is known here (not derivable from the error's class).
 * Without `retryAfterMs` the runtime retries with its exponential backoff.
 */
class EndpointProblem extends Error {
  readonly reason: string;
  readonly retryAfterMs: number | undefined;
  readonly terminal = false;
  constructor(reason: string, message: string, retryAfterMs?: number) {
    super(message);
    this.reason = reason;
    this.retryAfterMs = retryAfterMs;
  }
}

type Ctx = Context<ComputeEndpointObject>;

class ComputeEndpointReconciler implements Reconciler<ComputeEndpointObject> {
  private readonly options: KindControllerOptions;
  private readonly pollMs: number;

  constructor(options: KindControllerOptions) {
    this.options = options;
    this.pollMs = options.pollIntervalMs ?? 5_000;
  }

  /**
   * Polls fall on shared ticks of the poll interval (at least half an interval away), so every
   * resource of a project waiting on operations looks at the same moment and the project's
   * operations tracker and endpoint snapshot serve them all with one request each.
   */
  private nextPoll(intervalMs: number): number {
    const tick = Math.max(intervalMs, 1);
    const untilTick = tick - (Date.now() % tick);
    return untilTick < tick / 2 ? untilTick + tick : untilTick;
  }

  /**
   * When to look first after a change: when operations like its own usually finish (learned by
   * the client), on a one-second grid so the resources changed together look together; before
   * anything is learned, or for slow operations, on the next poll tick.
   */
  private firstLook(client: PlatformClient, operations: readonly Operation[]): number {
    const expected = client.expectedDuration(operations);
    if (expected === undefined || expected >= this.pollMs) return this.nextPoll(this.pollMs);
    const now = Date.now();
    return Math.ceil((now + expected + 250) / 1_000) * 1_000 - now;
  }

  private now(): Date {
    return this.options.now?.() ?? new Date();
  }

  async reconcile(obj: ComputeEndpointObject, ctx: Ctx): Promise<Action> {
    try {
      return await this.sync(obj, parseSpec(obj), ctx);
    } catch (err) {
      await this.reportFailure(obj, ctx, err);
      throw err;
    }
  }

  async cleanup(obj: ComputeEndpointObject, ctx: Ctx): Promise<Action> {
    const spec = ComputeEndpointSpec.safeParse(obj.spec);
    // Orphan, observe-only, or never created: the platform endpoint stays as it is.
    if (
      !spec.success ||
      spec.data.deletionPolicy === "Orphan" ||
      spec.data.managementPolicy === "ObserveOnly"
    ) {
      return Action.done();
    }
    const client = await this.client(obj, spec.data, ctx);
    const endpoint = await this.find(client, obj, spec.data, this.observeMaxAge(obj));
    if (!endpoint) return Action.done();
    try {
      await client.deleteEndpoint(spec.data.projectId, endpoint.id, { ticket: objectKey(obj) });
      ctx.events.normal("Deleted", "Delete", `deleted endpoint ${endpoint.id}`);
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
    }
    // Come back to see it gone from the project before the finalizer is released.
    return Action.requeueAfter(Math.min(this.pollMs, 1_000));
  }

  /** Secrets read by name, outside the watched namespaces (the operator's own credentials). */
  private readonly unwatchedSecrets = new Map<string, { secret: Secret | undefined; at: number }>();

  private async client(
    obj: ComputeEndpointObject,
    spec: ComputeEndpointSpec,
    ctx: Ctx,
  ): Promise<PlatformClient> {
    const namespace = obj.metadata.namespace ?? "";
    const target = this.options.access.secretFor(namespace, spec.credentials);
    const secret = target ? await this.secret(target.namespace, target.name, ctx) : undefined;
    return this.options.access.resolve(namespace, spec.credentials, () => secret).client;
  }

  /**
   * A credentials Secret from the cache; the operator's default one usually
   * lives in its own namespace, which need not be watched, so it is read by
   * name and kept for a few seconds (thousands of resources share it).
   */
  private async secret(namespace: string, name: string, ctx: Ctx): Promise<Secret | undefined> {
    const cached = ctx.cache<Secret>(secretKind).get(namespace, name);
    if (cached) return cached;
    const key = `${namespace}/${name}`;
    const memo = this.unwatchedSecrets.get(key);
    if (memo && Date.now() - memo.at < 10_000) return memo.secret;
    const secret = await ctx.client.get<Secret>(secretKind, namespace, name);
    this.unwatchedSecrets.set(key, { secret, at: Date.now() });
    return secret;
  }

  /** The endpoint this resource stands for: adopted id, recorded id, or the name given on creation. */
  private async find(
    client: PlatformClient,
    obj: ComputeEndpointObject,
    spec: ComputeEndpointSpec,
    maxAgeMs: number,
  ): Promise<Endpoint | undefined> {
    let endpoints: readonly Endpoint[];
    try {
      endpoints = await client.snapshot(spec.projectId, { maxAgeMs });
    } catch (err) {
      if (err instanceof NotFoundError) {
        throw new EndpointProblem("ProjectNotFound", `project ${spec.projectId} not found`, 60_000);
      }
      throw err;
    }
    const id = spec.endpointId ?? obj.status?.endpointId;
    const name = creationName(obj.metadata.uid ?? "");
    return id
      ? (endpoints.find((e) => e.id === id) ?? endpoints.find((e) => e.name === name))
      : endpoints.find((e) => e.name === name);
  }

  private async sync(obj: ComputeEndpointObject, spec: ComputeEndpointSpec, ctx: Ctx): Promise<Action> {
    const client = await this.client(obj, spec, ctx);
    const status = obj.status ?? {};

    // 1. The last change is still running on the platform: look again later. Once its
    // operations finish, the client's snapshot shows the endpoint in the state the change
    // announced, so no new list of the project is needed to see it.
    let operations = status.operations;
    if (operationsRunning(operations)) {
      const outcome = await client.waitForOperations(
        spec.projectId,
        trackedOperations(operations ?? [], spec.projectId, status.endpointId),
      );
      const before = operations;
      operations = statusOperations(outcome.operations);
      if (outcome.state === "running") {
        // Nothing new to tell (same operations in the same states, same generation): the status
        // already says what is under way, and a write per poll would cost the API server.
        if (sameOperations(before, operations) && status.observedGeneration === obj.metadata.generation) {
          return Action.requeueAfter(this.nextPoll(outcome.retryAfterMs));
        }
        await this.write(
          obj,
          ctx,
          { ...status, operations },
          { ready: waitingFor(outcome), reconciling: true },
        );
        return Action.requeueAfter(this.nextPoll(outcome.retryAfterMs));
      }
      if (outcome.state === "failed") {
        const message = `operation ${describeOps(outcome.failed)} failed (failures_count ${outcome.failuresCount})`;
        await this.write(
          obj,
          ctx,
          { ...status, operations },
          {
            ready: ["False", "OperationFailed", message],
            synced: ["False", "OperationFailed", message],
          },
        );
        ctx.events.warning("OperationFailed", "Reconcile", message);
        // Retried with backoff: the next pass observes and re-applies what still differs.
        throw new EndpointProblem("OperationFailed", message);
      }
    }

    // 2. Observe.
    const endpoint = await this.find(client, obj, spec, this.observeMaxAge(obj));
    if (!endpoint) return this.createOrReport(obj, spec, client, ctx);
    if (spec.managementPolicy === "ObserveOnly") {
      await this.write(
        obj,
        ctx,
        { ...obj.status, ...observedFields(endpoint), operations },
        {
          ready: ["True", "Observed", `endpoint ${endpoint.id} is ${endpoint.currentState}; observe-only`],
          synced: ["True", "Observed", "observe-only: nothing is changed on the platform"],
        },
      );
      await this.publish(obj, spec, ctx);
      return this.observeAgain(obj);
    }

    // 3. At most one change per pass: the platform refuses a second while the first runs (423).
    const mutation = await this.change(obj, spec, endpoint, client, ctx);
    if (mutation) {
      await this.write(
        obj,
        ctx,
        {
          ...obj.status,
          ...observedFields(mutation.result.endpoint),
          operations: statusOperations(mutation.result.operations),
          ...mutation.status,
        },
        {
          ready: ["False", mutation.reason, mutation.message],
          synced: ["True", mutation.reason, mutation.message],
          reconciling: mutation.result.operations.length > 0,
        },
      );
      return mutation.result.operations.length > 0
        ? Action.requeueAfter(this.firstLook(client, mutation.result.operations))
        : Action.requeueAfter(0);
    }

    // 4. As declared.
    await this.write(
      obj,
      ctx,
      { ...obj.status, ...observedFields(endpoint), operations, suspended: spec.suspended },
      {
        ready: usable(endpoint)
          ? ["True", "Available", `endpoint ${endpoint.id} is ${endpoint.currentState}`]
          : ["False", "EndpointState", `endpoint ${endpoint.id} is ${endpoint.currentState}`],
        synced: ["True", "Synced", "the endpoint matches the spec"],
      },
    );
    await this.publish(obj, spec, ctx);
    return this.observeAgain(obj);
  }

  /** Creates the endpoint, unless this resource may only observe, adopts, or loses a branch claim. */
  private async createOrReport(
    obj: ComputeEndpointObject,
    spec: ComputeEndpointSpec,
    client: PlatformClient,
    ctx: Ctx,
  ): Promise<Action> {
    if (spec.endpointId) {
      throw new EndpointProblem(
        "EndpointNotFound",
        `endpoint ${spec.endpointId} not found in project ${spec.projectId}`,
        60_000,
      );
    }
    if (obj.status?.endpointId) {
      ctx.events.warning(
        "EndpointGone",
        "Create",
        `endpoint ${obj.status.endpointId} was deleted outside; recreating it`,
      );
    }
    this.checkBranchClaim(obj, spec, ctx);
    const name = creationName(obj.metadata.uid ?? "");
    this.options.crashPoint?.("before-create");
    let result: EndpointMutation;
    try {
      result = await client.createEndpoint(spec.projectId, createSpec(spec, name), {
        ticket: objectKey(obj),
      });
    } catch (err) {
      throw platformProblem(err, spec.branchId);
    }
    this.options.crashPoint?.("after-create");
    ctx.events.normal(
      "Created",
      "Create",
      `created endpoint ${result.endpoint.id} on branch ${spec.branchId}`,
    );
    await this.write(
      obj,
      ctx,
      {
        ...observedFields(result.endpoint),
        creationName: name,
        operations: statusOperations(result.operations),
        suspended: spec.suspended,
        restartedAt: obj.metadata.annotations?.[restartedAtAnnotation],
      },
      {
        ready: ["False", "Creating", `creating endpoint ${result.endpoint.id}`],
        synced: ["True", "Creating", "create request accepted"],
        reconciling: true,
      },
    );
    return Action.requeueAfter(this.firstLook(client, result.operations));
  }

  /** Two resources of this cluster must not both create the read-write endpoint of one branch. */
  private checkBranchClaim(obj: ComputeEndpointObject, spec: ComputeEndpointSpec, ctx: Ctx): void {
    if (spec.type !== "read_write") return;
    const mine = claimOrder(obj);
    const rival = ctx
      .cache<ComputeEndpointObject>(computeEndpointResourceKind)
      .list()
      .filter(
        (other) =>
          other.metadata.uid !== obj.metadata.uid &&
          !other.metadata.deletionTimestamp &&
          other.spec.type === "read_write" &&
          other.spec.projectId === spec.projectId &&
          other.spec.branchId === spec.branchId &&
          claimOrder(other) < mine,
      )[0];
    if (rival) {
      throw new EndpointProblem(
        "BranchHasReadWriteEndpoint",
        `ComputeEndpoint ${objectKey(rival)} already claims the read-write endpoint of branch ${spec.branchId}`,
        30_000,
      );
    }
  }

  private async change(
    obj: ComputeEndpointObject,
    spec: ComputeEndpointSpec,
    endpoint: Endpoint,
    client: PlatformClient,
    ctx: Ctx,
  ): Promise<
    | { result: EndpointMutation; reason: string; message: string; status?: Partial<ComputeEndpointStatus> }
    | undefined
  > {
    const { projectId } = spec;
    if (endpoint.currentState === "init") {
      // Nothing of ours is running (step 1 waited), so its start failed or was lost: start it again.
      const result = await client.startEndpoint(projectId, endpoint.id, { ticket: objectKey(obj) });
      ctx.events.normal("Starting", "Start", "the endpoint never started; starting it");
      return { result, reason: "Starting", message: "starting the endpoint" };
    }
    const patch = difference(spec, endpoint);
    const fields = Object.keys(patch);
    if (fields.length > 0) {
      if (restartsEndpoint(patch)) {
        ctx.events.normal(
          "Restarting",
          "Update",
          "changing the compute size restarts the endpoint and drops its connections",
        );
      }
      let result: EndpointMutation;
      try {
        result = await client.updateEndpoint(projectId, endpoint.id, patch, { ticket: objectKey(obj) });
      } catch (err) {
        throw platformProblem(err, spec.branchId);
      }
      const moved = patch.branchId !== undefined;
      const message = moved
        ? `moving endpoint ${endpoint.id} to branch ${spec.branchId}`
        : `updating ${fields.join(", ")}`;
      ctx.events.normal(moved ? "Moving" : "Updating", "Update", message);
      return { result, reason: "Updating", message };
    }
    const restartedAt = obj.metadata.annotations?.[restartedAtAnnotation];
    if (restartedAt !== undefined && restartedAt !== obj.status?.restartedAt) {
      const result = await client.restartEndpoint(projectId, endpoint.id, { ticket: objectKey(obj) });
      ctx.events.normal(
        "Restarting",
        "Restart",
        `restart requested (${restartedAtAnnotation}=${restartedAt})`,
      );
      return { result, reason: "Restarting", message: "restarting the endpoint", status: { restartedAt } };
    }
    if (spec.suspended === true && endpoint.currentState !== "idle") {
      const result = await client.suspendEndpoint(projectId, endpoint.id, { ticket: objectKey(obj) });
      ctx.events.normal("Suspending", "Suspend", "spec.suspended is true");
      return {
        result,
        reason: "Suspending",
        message: "suspending the endpoint",
        status: { suspended: true },
      };
    }
    if (spec.suspended === false && obj.status?.suspended === true && endpoint.currentState === "idle") {
      const result = await client.startEndpoint(projectId, endpoint.id, { ticket: objectKey(obj) });
      ctx.events.normal("Starting", "Start", "spec.suspended changed to false");
      return { result, reason: "Starting", message: "starting the endpoint", status: { suspended: false } };
    }
    return undefined;
  }

  private async publish(obj: ComputeEndpointObject, spec: ComputeEndpointSpec, ctx: Ctx): Promise<void> {
    const name = spec.connectionConfigMapName;
    const status = obj.status;
    if (!name || !status?.endpointId) return;
    const existing = ctx.cache<ConfigMap>(configMapKind).get(obj.metadata.namespace, name);
    await publishConnection(ctx.client, obj, name, connectionData(spec.projectId, status), existing);
  }

  /**
   * How old a project's endpoint list may be for looking at drift: one resync period, or the
   * resource's own observe interval. Changes this operator makes are recorded in the list as
   * they happen, so only changes made elsewhere wait for it; the idle cost is then about one
   * list request per project per resync.
   */
  private observeMaxAge(obj: ComputeEndpointObject): number {
    const ms = observeInterval(obj);
    const resync = this.options.resyncPeriodMs ?? 600_000;
    return ms !== undefined ? Math.min(ms, resync) : resync;
  }

  /** Drift is looked for by the runtime's resync; an annotation may ask for a different interval. */
  private observeAgain(obj: ComputeEndpointObject): Action {
    const ms = observeInterval(obj);
    return ms !== undefined ? Action.requeueAfter(ms) : Action.done();
  }

  /** Writes status (skipped by the runtime when nothing changed) and keeps `obj` current. */
  private async write(
    obj: ComputeEndpointObject,
    ctx: Ctx,
    status: ComputeEndpointStatus,
    conditions: Conditions,
  ): Promise<void> {
    const generation = obj.metadata.generation;
    const next: ComputeEndpointStatus = {
      ...status,
      observedGeneration: generation,
      conditions: withConditions(obj.status?.conditions, generation, conditions, this.now()),
    };
    for (const key of Object.keys(next) as (keyof ComputeEndpointStatus)[]) {
      if (next[key] === undefined) delete next[key];
    }
    const updated = await ctx.status.patch(obj, next);
    obj.status = updated.status ?? next;
    obj.metadata = updated.metadata;
  }

  private async reportFailure(obj: ComputeEndpointObject, ctx: Ctx, err: unknown): Promise<void> {
    const failure =
      err instanceof EndpointProblem ? { reason: err.reason, message: err.message } : describeFailure(err);
    if (failure.reason === "OperationFailed") return;
    if (failure.waiting) {
      try {
        await this.write(obj, ctx, { ...obj.status }, { ready: ["False", failure.reason, failure.message] });
      } catch (writeErr) {
        ctx.log.warn({ err: writeErr }, "could not record the wait in status");
      }
      return;
    }
    const terminal = err instanceof TerminalError || (err as { terminal?: unknown }).terminal === true;
    if (err instanceof UnauthorizedError) {
      ctx.events.warning("Unauthorized", "Reconcile", failure.message);
    }
    try {
      await this.write(
        obj,
        ctx,
        { ...obj.status },
        {
          ready: ["False", failure.reason, failure.message],
          synced: ["False", failure.reason, failure.message],
          stalled: terminal,
        },
      );
    } catch (writeErr) {
      ctx.log.warn({ err: writeErr }, "could not record the failure in status");
    }
  }
}

/** The resource's own drift-observation interval (its annotation), when it sets a valid one. */
function observeInterval(obj: ComputeEndpointObject): number | undefined {
  const override = obj.metadata.annotations?.[observeIntervalAnnotation];
  const ms = override ? parseDuration(override) : undefined;
  return ms !== undefined && ms > 0 ? ms : undefined;
}

/** Serving, or suspended and ready to wake on the next connection. */
function usable(endpoint: Endpoint): boolean {
  return endpoint.currentState === "active" || endpoint.currentState === "idle";
}

/** Older resources win a branch; the UID breaks ties so every replica agrees. */
function claimOrder(obj: KubeObject): string {
  return `${obj.metadata.creationTimestamp ?? ""}/${obj.metadata.uid ?? ""}`;
}

function sameOperations(
  a: readonly EndpointOperation[] | undefined,
  b: readonly EndpointOperation[],
): boolean {
  return (
    a?.length === b.length &&
    a.every(
      (op, i) => op.id === b[i]?.id && op.status === b[i].status && op.failuresCount === b[i].failuresCount,
    )
  );
}

/**
 * What a resource waiting on its change's operations reads: the platform retrying a failed one
 * (`failed` with `retry_at` is not final) is named as such, with its failure count and next try.
 */
function waitingFor(
  outcome: Extract<OperationsOutcome, { state: "running" }>,
): [ConditionStatus, string, string] {
  if (outcome.retrying.length === 0) {
    return ["False", "OperationsRunning", `waiting for ${describeOps(outcome.running)}`];
  }
  const retries = outcome.retrying
    .map((op) => `${op.action} ${op.id} failed (failures_count ${op.failuresCount}); retry at ${op.retryAt}`)
    .join(", ");
  return ["False", "OperationRetrying", `the platform is retrying: ${retries}`];
}

function describeOps(ops: readonly { action: string; id: string }[]): string {
  return ops.map((op) => `${op.action} ${op.id}`).join(", ");
}

/** Names what the platform refused in the resource's own terms. */
function platformProblem(err: unknown, branchId: string): unknown {
  if (err instanceof ConflictError) {
    return new EndpointProblem(
      "BranchHasReadWriteEndpoint",
      `branch ${branchId} already has an endpoint of this kind: ${err.message}`,
      60_000,
    );
  }
  if (err instanceof NotFoundError) {
    return new EndpointProblem("BranchNotFound", `branch ${branchId} not found: ${err.message}`, 60_000);
  }
  return err;
}

/** The API server validated the spec already; this catches objects stored under an older schema. */
function parseSpec(obj: ComputeEndpointObject): ComputeEndpointSpec {
  const result = ComputeEndpointSpec.safeParse(obj.spec);
  if (result.success) return result.data;
  const issues = result.error.issues.map((i) => `spec.${i.path.join(".")}: ${i.message}`).join("; ");
  throw Object.assign(new TerminalError(`invalid spec: ${issues}`), { reason: "InvalidSpec" });
}

/**
 * The ComputeEndpoint controller. `create` lets a Manager own it; by default
 * it is a standalone Controller (tests).
 */
export function computeEndpointController(
  options: KindControllerOptions,
  create: ControllerFactory<ComputeEndpointObject> = (o) => new Controller(o, options.runtime),
): Controller<ComputeEndpointObject> {
  const access = options.access;
  const controller: Controller<ComputeEndpointObject> = create({
    kind: computeEndpointResourceKind,
    reconciler: new ComputeEndpointReconciler(options),
    finalizer: computeEndpointFinalizer,
    concurrency: options.concurrency,
    resyncPeriodMs: options.resyncPeriodMs,
    namespaces: options.namespaces,
    owns: [configMapKind],
    watches: [
      {
        // A credentials Secret that appears or changes re-reconciles the resources using it.
        kind: secretKind,
        map: (secret) =>
          controller.informer
            .list()
            .filter((cep) => {
              const target = access.secretFor(cep.metadata.namespace ?? "", cep.spec.credentials);
              return target?.namespace === secret.metadata.namespace && target?.name === secret.metadata.name;
            })
            .map(objectKey),
      },
    ],
  });
  return controller;
}
