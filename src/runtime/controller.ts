// A controller: one primary kind, its reconciler, and everything around it
// (informers, queue, finalizer, error policy, metrics), so the reconciler
// contains only the lifecycle of its kind. Modelled on kube-rs's Controller
// and controller-runtime's builder (`watches` / `owns`).
import { Action } from "./action.ts";
import * as conditions from "./conditions.ts";
import { classifyError, errorMessage, retryPolicy, type ErrorAction, type ErrorPolicy } from "./errors.ts";
import type { EventInput, EventRecorder } from "./events.ts";
import { addFinalizer, hasFinalizer, removeFinalizer } from "./finalizers.ts";
import type { Informer, IndexFunc, InformerOptions, Store } from "./informer.ts";
import {
  apiVersionOf,
  isNotFound,
  objectKey,
  parseKey,
  type KubeClient,
  type KubeObject,
  type ResourceKind,
} from "./kube.ts";
import { inReconcile, silentLogger, type Logger } from "./log.ts";
import type { Metrics, ReconcileResult } from "./metrics.ts";
import { ApiServerOutage } from "./outage.ts";
import { OwnWrites } from "./own-writes.ts";
import { handedOver, type Shard } from "./shard.ts";
import { SharedInformers } from "./shared-informers.ts";
import { StatusWriter, type StatusPatchOptions } from "./status.ts";
import type { CacheTransform } from "./transform.ts";
import { WorkQueue, duePriority, jittered, lowPriority, type BackoffOptions } from "./workqueue.ts";

/** What a reconciler gets besides the object. */
export interface Context<T extends KubeObject> {
  kind: ResourceKind;
  client: KubeClient;
  /** Writes the object's status subresource; skips writes that change nothing. */
  status: { patch(obj: T, status: Record<string, unknown>, options?: StatusPatchOptions): Promise<T> };
  conditions: typeof conditions;
  /** Records Events about the object being reconciled (repeats are aggregated). */
  events: {
    normal(reason: string, action: string, note: string): void;
    warning(reason: string, action: string, note: string): void;
  };
  /** The cache of a kind this controller watches (its own, `watches` or `owns`): read-only. */
  cache<U extends KubeObject = KubeObject>(kind: ResourceKind): Store<U>;
  log: Logger;
  /** Aborted when this replica must stop acting (lost leadership, shutdown past its deadline). */
  signal: AbortSignal;
  /**
   * Queues the object again now: for a reconciler told that something it waits on outside the
   * cluster has happened (earlier than the requeue it returned).
   */
  wake(): void;
}

export interface Reconciler<T extends KubeObject> {
  /** Brings the world in line with `obj`. Throw to retry (see errors.ts for how errors steer retries). */
  reconcile(obj: T, ctx: Context<T>): Promise<Action>;
  /** With a finalizer configured: called while the object is being deleted; the finalizer is removed when it returns done. */
  cleanup?(obj: T, ctx: Context<T>): Promise<Action>;
  /** How a failure of reconcile or cleanup is retried (default: by the error's shape, errors.ts). */
  errorPolicy?(obj: T, err: unknown): ErrorAction;
}

/**
 * A secondary kind whose changes re-reconcile the primary objects `map`
 * returns keys (`namespace/name`) for; `primary` is the primary kind's cache,
 * e.g. to find every ComputeEndpoint naming a credentials Secret.
 */
export interface WatchSpec<T extends KubeObject = KubeObject, U extends KubeObject = KubeObject> {
  kind: ResourceKind;
  map(obj: U, primary: Store<T>): string[];
  labelSelector?: string;
  /** What the cache keeps of each object of this kind (default: the controller's informer transform). */
  transform?: CacheTransform;
  /** Watch metadata only, on the server side (see `InformerOptions.metadataOnly`). */
  metadataOnly?: boolean;
}

/** A secondary kind whose objects name a primary object in their ownerReferences. */
export interface OwnsSpec {
  kind: ResourceKind;
  labelSelector?: string;
}

export interface ControllerOptions<T extends KubeObject> {
  kind: ResourceKind;
  reconciler: Reconciler<T>;
  /** Finalizer name, e.g. "neoncloud.dev/cleanup"; without it `cleanup` is never called. */
  finalizer?: string;
  /** Objects reconciled at once (default 4). */
  concurrency?: number;
  /** Every object is re-reconciled this often, jittered (default 10 min; 0 disables). */
  resyncPeriodMs?: number;
  namespaces?: string[];
  labelSelector?: string;
  /** Indexes of the primary cache, for `watches` mappings and reconcilers (`Store.byIndex`). */
  indexes?: Record<string, IndexFunc<T>>;
  watches?: WatchSpec<T>[];
  owns?: (ResourceKind | OwnsSpec)[];
  /** Per-object retry backoff (default 5 ms doubling to 5 min, jittered). */
  backoff?: BackoffOptions;
  /**
   * An object whose reconcile failed only because the Kubernetes API server did not answer is
   * retried as soon as the server answers again (a probe every few seconds, or a watch
   * reconnecting), and at the latest after this long (default 30 s), with no failure counted.
   */
  apiServerRetryMaxMs?: number;
  /** Tuning of the informers (watch timeouts, watchdog, reconnect backoff). */
  informer?: Omit<InformerOptions, "namespaces" | "labelSelector" | "log">;
  /** The objects of all it caches this instance reconciles, when instances share a kind (shard.ts). */
  shard?: Shard;
}

export interface ControllerDeps {
  client: KubeClient;
  metrics?: Metrics;
  events?: EventRecorder;
  log?: Logger;
  /**
   * The informers of the controllers this one runs beside (its manager's), shared with them and
   * stopped by their owner; without them the controller makes and stops its own.
   */
  informers?: SharedInformers;
}

function kindId(kind: ResourceKind): string {
  return `${kind.plural}.${kind.group || "core"}`;
}

export class Controller<T extends KubeObject = KubeObject> {
  readonly kind: ResourceKind;
  readonly informer: Informer<T>;
  private readonly options: ControllerOptions<T>;
  private readonly deps: ControllerDeps;
  private readonly log: Logger;
  /** The informers this controller reads, by kind; made by (or shared through) `sharedInformers`. */
  private readonly informers = new Map<string, Informer>();
  /** The views of them handed to mappings and reconcilers, with this controller's index names. */
  private readonly stores = new Map<string, Store>();
  private readonly sharedInformers: SharedInformers;
  /** Whether `sharedInformers` is this controller's own (then it stops them). */
  private readonly ownsInformers: boolean;
  /** The names of this controller's indexes on informers it may share, by kind and its own name. */
  private readonly indexNames = new Map<string, string>();
  private readonly statusWriter: StatusWriter;
  /** This controller's own writes, as its watch echoes them back (own-writes.ts). */
  private readonly own = new OwnWrites();
  /**
   * Keys that failed terminally, with the generation that failed: no backoff retries, and the
   * object's own updates (status writes) do not bring it back; a new generation, a change of
   * something it watches, or a resync does.
   */
  private readonly terminal = new Map<string, number | undefined>();
  /** Objects taken over from another shard, held until then (shard.ts). */
  private readonly held = new Map<string, number>();
  /** Keys that wait for the API server to answer again (outage.ts). */
  private readonly outage: ApiServerOutage;
  private queue: WorkQueue | undefined;
  private term: AbortController | undefined;
  private workers: Promise<void>[] = [];
  private resyncTimer: NodeJS.Timeout | undefined;
  private running = 0;
  private peak = 0;

  constructor(options: ControllerOptions<T>, deps: ControllerDeps) {
    this.options = options;
    this.deps = deps;
    this.kind = options.kind;
    this.log = (deps.log ?? silentLogger).child({ controller: this.metricsName });
    this.sharedInformers = deps.informers ?? new SharedInformers(deps.client);
    this.ownsInformers = deps.informers === undefined;
    this.statusWriter = new StatusWriter(deps.client, options.kind);
    // The question is a list of one object of this controller's kind: the path its work needs,
    // the kind being served included.
    this.outage = new ApiServerOutage(
      (signal) => deps.client.list(options.kind, { namespace: options.namespaces?.[0], limit: 1, signal }),
      (keys) => {
        if (this.queue) this.enqueueAll(keys);
      },
      this.log,
    );
    const informerOptions = (labelSelector?: string): InformerOptions => ({
      ...options.informer,
      namespaces: options.namespaces,
      labelSelector,
      log: this.log,
    });
    this.informer = this.sharedInformers.informer(
      options.kind,
      informerOptions(options.labelSelector),
    ) as unknown as Informer<T>;
    this.informers.set(kindId(options.kind), this.informer);
    for (const [name, fn] of Object.entries(options.indexes ?? {})) this.addIndex(options.kind, name, fn);
    const primary = this.store(options.kind) as Store<T>;
    this.informer.on({
      add: (o) => {
        this.own.echoed(o);
        this.enqueue(objectKey(o));
      },
      update: (old, o) => {
        // The echo of this controller's own write carries nothing new: the reconcile that wrote
        // it has already chosen what comes next (a poll, a turn, nothing).
        if (this.own.echoed(o) || this.own.holdDuringReconcile(o)) return;
        if (options.shard && handedOver(options.shard, old, o)) {
          this.log.info(
            { object: objectKey(o), afterMs: options.shard.handoverMs },
            "taken over from another shard; reconciled once that shard's running reconcile can have ended",
          );
          this.held.set(objectKey(o), Date.now() + options.shard.handoverMs);
        }
        this.enqueue(objectKey(o));
      },
      delete: (o) => {
        this.own.forget(objectKey(o));
        this.enqueue(objectKey(o));
      },
      reconnected: () => this.outage.answered(),
    });
    for (const w of options.watches ?? []) {
      // A watch of the primary kind itself (a Branch waking the Branches created from it) rides
      // on the primary informer; own status writes included, as they are what the others wait for.
      const informer =
        kindId(w.kind) === kindId(options.kind)
          ? (this.informer as unknown as Informer)
          : this.secondary(w.kind, w.labelSelector, informerOptions, w);
      informer.on({
        add: (o) => this.retryAll(w.map(o, primary)),
        update: (old, o) => this.retryAll([...w.map(old, primary), ...w.map(o, primary)]),
        delete: (o) => this.retryAll(w.map(o, primary)),
        reconnected: () => this.outage.answered(),
      });
    }
    for (const o of options.owns ?? []) {
      const spec = "plural" in o ? { kind: o } : o;
      const owners = (obj: KubeObject): string[] =>
        (obj.metadata.ownerReferences ?? [])
          .filter((r) => r.kind === this.kind.kind && r.apiVersion === apiVersionOf(this.kind))
          .map((r) => (obj.metadata.namespace ? `${obj.metadata.namespace}/${r.name}` : r.name));
      this.secondary(spec.kind, spec.labelSelector, informerOptions).on({
        add: (obj) => this.retryAll(owners(obj)),
        update: (old, obj) => this.retryAll([...owners(old), ...owners(obj)]),
        delete: (obj) => this.retryAll(owners(obj)),
        reconnected: () => this.outage.answered(),
      });
    }
  }

  private secondary(
    kind: ResourceKind,
    labelSelector: string | undefined,
    informerOptions: (labelSelector?: string) => InformerOptions,
    shape: { transform?: CacheTransform; metadataOnly?: boolean } = {},
  ): Informer {
    const id = kindId(kind);
    if (this.informers.has(id)) throw new Error(`${this.kind.kind} controller watches ${id} twice`);
    const options = informerOptions(labelSelector);
    const informer = this.sharedInformers.informer(kind, {
      ...options,
      ...(shape.transform ? { transform: shape.transform } : {}),
      ...(shape.metadataOnly ? { metadataOnly: true } : {}),
    });
    this.informers.set(id, informer);
    return informer;
  }

  /**
   * Adds an index to the cache of `kind` (the primary or one this controller watches), before the
   * caches start; mappings and reconcilers of this controller find it by `name` (`Store.byIndex`).
   * On a shared informer, controllers indexing it by the same function under the same name share
   * one index (a kind holding what several kinds use); another function gets its own.
   */
  addIndex<U extends KubeObject>(kind: ResourceKind, name: string, fn: IndexFunc<U>): void {
    const id = kindId(kind);
    const informer = this.informers.get(id);
    if (!informer) throw new Error(`${this.kind.kind} controller does not watch ${id}`);
    if (this.indexNames.has(`${id} ${name}`))
      throw new Error(`${this.kind.kind} controller indexes ${id} by ${name} twice`);
    this.indexNames.set(`${id} ${name}`, informer.addSharedIndex(name, fn as IndexFunc<KubeObject>));
  }

  /** The cache of `kind` as this controller reads it: its own index names. */
  private store(kind: ResourceKind): Store {
    const id = kindId(kind);
    const known = this.stores.get(id);
    if (known) return known;
    const informer = this.informers.get(id);
    if (!informer) throw new Error(`${this.kind.kind} controller does not watch ${id}`);
    const store: Store = {
      get: (namespace, name) => informer.get(namespace, name),
      getByKey: (key) => informer.getByKey(key),
      list: (namespace) => informer.list(namespace),
      byIndex: (index, value) => informer.byIndex(this.indexNames.get(`${id} ${index}`) ?? index, value),
    };
    this.stores.set(id, store);
    return store;
  }

  /** All caches this controller keeps (the manager reports readiness from them). */
  get caches(): Informer[] {
    return [...this.informers.values()];
  }

  get synced(): boolean {
    return this.caches.every((i) => i.synced);
  }

  /** The controller's name in metrics: its kind in lower case, as controller-runtime names it. */
  get metricsName(): string {
    return this.kind.kind.toLowerCase();
  }

  /** The most reconciles that ran at once so far (for tests and benchmarks). */
  get peakConcurrency(): number {
    return this.peak;
  }

  /** Starts the caches. Standby replicas do this too, so a new leader starts warm. */
  startCaches(): void {
    for (const informer of this.informers.values()) informer.start();
  }

  async waitForSync(): Promise<void> {
    await Promise.all(this.caches.map((i) => i.waitForSync()));
  }

  /** Begins reconciling (on becoming leader): every cached object is queued once. */
  startWorkers(): void {
    if (this.queue) return;
    const concurrency = this.options.concurrency ?? 4;
    this.deps.metrics?.controllerStarted(this.metricsName, concurrency);
    const idle = { unfinishedWorkSeconds: 0, longestRunningProcessorSeconds: 0 };
    this.queue = new WorkQueue({
      ...this.options.backoff,
      hooks: this.deps.metrics?.workQueue(this.metricsName, () => this.queue?.unfinishedWork() ?? idle),
    });
    this.term = new AbortController();
    // Low priority: changes and polls that arrive meanwhile go first.
    for (const key of this.informer.keys()) this.queue.add(key, lowPriority);
    this.workers = Array.from({ length: concurrency }, () => this.work(this.queue!, this.term!.signal));
    this.scheduleResync();
  }

  /**
   * Stops reconciling. Running reconciles get `deadlineMs` to finish; then
   * (or at once with 0, when leadership is lost) their signal is aborted.
   */
  async stopWorkers(deadlineMs: number): Promise<void> {
    const queue = this.queue;
    const term = this.term;
    if (!queue || !term) return;
    this.queue = undefined;
    this.outage.stop();
    clearTimeout(this.resyncTimer);
    if (deadlineMs <= 0) term.abort(new Error("stopped acting"));
    const drained = await queue.drain(deadlineMs);
    if (!drained && !term.signal.aborted) {
      this.log.warn(
        { inFlight: queue.inFlight },
        "reconciles still running at the shutdown deadline; aborting them",
      );
      term.abort(new Error("shutdown deadline passed"));
    }
    // An aborted reconcile gets a moment to notice its signal; one that ignores it is left behind.
    const workers = Promise.all(this.workers);
    this.workers = [];
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      workers,
      new Promise((resolve) => (timer = setTimeout(resolve, drained ? 0 : 1_000))),
    ]);
    clearTimeout(timer);
  }

  /** Stops workers, and the caches when they are this controller's own (shared ones: their owner's). */
  async stop(deadlineMs = 0): Promise<void> {
    await this.stopWorkers(deadlineMs);
    if (this.ownsInformers) await this.sharedInformers.stop();
  }

  /** Queues `key` (namespace/name) for reconciling, e.g. from a custom trigger. */
  enqueue(key: string): void {
    if (this.mine(key)) this.queue?.add(key);
  }

  /** Whether this instance reconciles the object of `key`: its shard's, or gone from the cache. */
  private mine(key: string): boolean {
    return this.ours(this.informer.getByKey(key));
  }

  /** Whether this instance reconciles `obj`: no shards, gone, or its labels match this shard's. */
  private ours(obj: KubeObject | undefined): boolean {
    const shard = this.options.shard;
    return !shard || obj === undefined || shard.selector.matches(obj.metadata.labels);
  }

  /**
   * The object to reconcile: the cached copy, unless it predates this controller's own last write.
   * Then wait a moment for the watch to deliver the write (the usual case: milliseconds), and past
   * that read it afresh.
   */
  private async current(key: string, queue: WorkQueue): Promise<T | "wait" | undefined> {
    const cached = this.informer.getByKey(key);
    const standing = this.own.standing(key, cached);
    if (standing === "current") return cached;
    if (standing === "wait") {
      queue.addAfter(key, 20, duePriority);
      return "wait";
    }
    const { namespace, name } = parseKey(key);
    return this.deps.client.get<T>(this.kind, namespace, name);
  }

  /**
   * Something the objects depend on changed (a Secret appeared, an owned object was edited): try
   * them again, terminal failures included. A terminal failure waits for new evidence, not only for
   * a new generation; only the object's own updates (its status writes) leave it be.
   */
  private retryAll(keys: string[]): void {
    for (const key of keys) this.terminal.delete(key);
    this.enqueueAll(keys);
  }

  private enqueueAll(keys: string[]): void {
    for (const key of new Set(keys)) this.enqueue(key);
  }

  /**
   * Schedules the retry of a failed key (terminal failures are the caller's to remember). A key
   * that failed for want of the API server waits for it: retried the moment it answers again,
   * at the latest after `apiServerRetryMaxMs`. Retrying sooner would only fail again, after
   * spending platform requests, and counting the outage against the object would leave it
   * minutes of backoff once the server is back.
   */
  private retryLater(key: string, queue: WorkQueue, policy: ErrorPolicy): void {
    if (policy.kind === "apiServerUnavailable") {
      queue.addAfter(key, jittered((this.options.apiServerRetryMaxMs ?? 30_000) / 2, 1));
      this.outage.wait(key);
      return;
    }
    this.outage.release(key);
    if (policy.kind === "retryAfter") queue.addAfter(key, policy.ms);
    else if (policy.kind === "backoff") queue.addRateLimited(key, policy.fromMs, policy.maxMs);
    else queue.addRateLimited(key);
  }

  private scheduleResync(): void {
    const period = this.options.resyncPeriodMs ?? 600_000;
    if (period <= 0) return;
    this.resyncTimer = setTimeout(() => {
      // A resync looks at everything again, a terminal failure included (once per period).
      this.terminal.clear();
      for (const key of this.informer.keys()) if (this.mine(key)) this.queue?.add(key, lowPriority);
      this.scheduleResync();
    }, jittered(period));
    this.resyncTimer.unref();
  }

  private async work(queue: WorkQueue, signal: AbortSignal): Promise<void> {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      this.running++;
      this.own.begin(key);
      this.peak = Math.max(this.peak, this.running);
      this.deps.metrics?.activeWorkers.inc({ controller: this.metricsName });
      try {
        const { namespace, name } = parseKey(key);
        // Every line logged while this key is reconciled names it (log.ts).
        if (!signal.aborted)
          await inReconcile({ kind: this.kind.kind, namespace, name }, () =>
            this.process(key, queue, signal),
          );
      } catch (err) {
        // process() handles reconcile errors itself; this keeps anything else from ending the worker.
        this.retryLater(key, queue, retryPolicy(err, classifyError));
        this.log.error({ object: key, err }, "unexpected error; will retry");
      } finally {
        this.running--;
        // Changes that arrived during the reconcile and were not its own writes: run it again.
        if (this.own.end(key)) this.enqueue(key);
        this.deps.metrics?.activeWorkers.dec({ controller: this.metricsName });
        queue.done(key);
      }
    }
  }

  private context(obj: T, signal: AbortSignal, log: Logger): Context<T> {
    const events = this.deps.events;
    const record = (input: EventInput): void => {
      if (!signal.aborted) events?.record(obj, input);
    };
    return {
      kind: this.kind,
      client: this.deps.client,
      status: {
        patch: async (o, status, options) => {
          signal.throwIfAborted();
          const updated = await this.statusWriter.patch(o, status, options);
          if (updated !== o) this.own.wrote(updated);
          return updated;
        },
      },
      conditions,
      events: {
        normal: (reason, action, note) => record({ type: "Normal", reason, action, note }),
        warning: (reason, action, note) => record({ type: "Warning", reason, action, note }),
      },
      cache: <U extends KubeObject>(kind: ResourceKind) => this.store(kind) as unknown as Store<U>,
      log,
      signal,
      wake: () => {
        if (!signal.aborted) this.enqueue(objectKey(obj));
      },
    };
  }

  private async process(key: string, queue: WorkQueue, signal: AbortSignal): Promise<void> {
    let obj: T | "wait" | undefined;
    try {
      obj = await this.current(key, queue);
    } catch (err) {
      // The fresh read failed (the API server restarting, a cut connection): try the key again later.
      this.retryLater(key, queue, retryPolicy(err, classifyError));
      this.log.warn({ err }, "reading the object failed; will retry");
      return;
    }
    if (obj === "wait") return;
    if (!this.ours(obj)) {
      // Moved to another shard since it was queued: that shard's now.
      queue.forget(key);
      this.outage.release(key);
      this.held.delete(key);
      return;
    }
    const until = this.held.get(key) ?? 0;
    if (until > Date.now()) {
      // Just taken over from another shard, which may still be reconciling it (shard.ts).
      queue.addAfter(key, until - Date.now());
      return;
    }
    this.held.delete(key);
    if (!obj) {
      // Deleted (and finalized): nothing left to do.
      queue.forget(key);
      this.outage.release(key);
      this.terminal.delete(key);
      return;
    }
    const deleting = obj.metadata.deletionTimestamp !== undefined;
    const generation = obj.metadata.generation;
    if (!deleting && this.terminal.has(key) && this.terminal.get(key) === generation) return;
    const log = this.log.child({ generation });
    const ctx = this.context(obj, signal, log);
    const started = performance.now();
    let result: ReconcileResult | "terminal";
    try {
      const action = deleting ? await this.finalize(obj, ctx) : await this.apply(obj, ctx);
      queue.forget(key);
      this.outage.release(key);
      this.terminal.delete(key);
      if (action.requeueAfterMs !== undefined) {
        queue.addAfter(key, action.requeueAfterMs, duePriority);
        result = "requeue_after";
      } else result = "success";
    } catch (err) {
      if (signal.aborted) {
        log.info("reconcile interrupted: this replica stopped acting");
        return;
      }
      const reconciler = this.options.reconciler;
      const policy = retryPolicy(err, (e) => reconciler.errorPolicy?.(obj, e) ?? classifyError(e));
      const message = errorMessage(err);
      // Waiting for something that ends by itself (the project's running operations): no
      // failure, no Warning event; the reconciler's status says what it waits for.
      const waiting = policy.kind === "retryAfter" && !policy.failure;
      if (policy.kind === "onChange") {
        this.outage.release(key);
        this.terminal.set(key, generation);
        result = "terminal";
        // A spec the operator refuses is the user's to change (its conditions and event say why):
        // no error of the operator's own.
        log.info({ err }, "reconcile failed terminally; waiting for a spec change");
      } else if (waiting) {
        queue.addAfter(key, policy.ms, duePriority);
        result = "requeue";
        log.debug({ reason: message, retryInMs: Math.round(policy.ms) }, "reconcile waits");
      } else {
        this.retryLater(key, queue, policy);
        result = "error";
        log.warn(
          { err, failures: queue.failureCount(key) },
          policy.kind === "apiServerUnavailable"
            ? "reconcile failed: the API server did not answer; will retry when it does"
            : "reconcile failed; will retry",
        );
      }
      if (!waiting) {
        ctx.events.warning(
          policy.kind === "onChange" ? "ReconcileFailed" : "ReconcileError",
          "Reconcile",
          message,
        );
      }
    }
    this.deps.metrics?.reconciled(this.metricsName, result, (performance.now() - started) / 1000);
  }

  private async apply(obj: T, ctx: Context<T>): Promise<Action> {
    let current = obj;
    const finalizer = this.options.finalizer;
    if (finalizer && !hasFinalizer(obj, finalizer)) {
      // Before anything is created on the platform, so a deletion can never skip cleanup.
      ctx.signal.throwIfAborted();
      current = await addFinalizer(this.deps.client, this.kind, obj, finalizer);
      this.own.wrote(current);
    }
    return this.options.reconciler.reconcile(current, ctx);
  }

  private async finalize(obj: T, ctx: Context<T>): Promise<Action> {
    const finalizer = this.options.finalizer;
    if (!finalizer || !hasFinalizer(obj, finalizer)) return Action.done();
    const action = this.options.reconciler.cleanup
      ? await this.options.reconciler.cleanup(obj, ctx)
      : Action.done();
    if (action.requeueAfterMs !== undefined) return action;
    ctx.signal.throwIfAborted();
    try {
      // Noted as this controller's own write: a reconcile queued meanwhile waits for the cache to
      // show the object gone, instead of cleaning up (and patching) an object that no longer exists.
      const removed = await removeFinalizer(this.deps.client, this.kind, obj, finalizer);
      if (removed) this.own.wrote(removed);
    } catch (err) {
      // Gone already: what removing the finalizer was for.
      if (!isNotFound(err)) throw err;
    }
    return Action.done();
  }
}
