// Keeps a local cache of one kind in sync with the API server: list, then
// watch from the list's resourceVersion with bookmarks. Unlike client-node's
// stock informer it never gives up: a closed stream resumes from the last
// resourceVersion, a 410 relists and diffs the cache (so objects deleted while
// disconnected produce deletes), any other error reconnects with jittered
// backoff, and a watchdog restarts streams that went silent.
import { backoffDelay, type BackoffOptions } from "./workqueue.ts";
import {
  apiVersionOf,
  isApiServerUnavailable,
  objectKey,
  type KubeClient,
  type KubeObject,
  type ResourceKind,
} from "./kube.ts";
import { silentLogger, type Logger } from "./log.ts";
import { pause } from "./pause.ts";
import { metadataOnly, stripManagedFields, type CacheTransform } from "./transform.ts";

export interface InformerHandlers<T> {
  add?(obj: T): void;
  update?(oldObj: T, newObj: T): void;
  delete?(obj: T): void;
  /**
   * The API server answers again after lists or watches failed (it restarted, the network
   * came back): work that failed for want of it can be retried now.
   */
  reconnected?(): void;
}

export interface InformerOptions {
  /** Namespaces to watch; empty or undefined watches all namespaces. */
  namespaces?: string[];
  labelSelector?: string;
  /** What is kept of each object (default `stripManagedFields`); see transform.ts. */
  transform?: CacheTransform;
  /**
   * Ask the API server for metadata only (PartialObjectMetadata lists and watches), for a kind
   * whose content is read by name when needed, such as Secrets: the rest of each object never
   * crosses the wire. Cached objects are `{apiVersion, kind, metadata}` of this kind, without
   * managedFields and kubectl's last-applied annotation (see the `metadataOnly` transform), then
   * `transform` applies if given.
   */
  metadataOnly?: boolean;
  /** Server-side watch timeout; each watch picks a random value in [t, 2t) like client-go. */
  watchTimeoutSeconds?: number;
  /**
   * A stream with no event (bookmarks included) for this long is restarted from its
   * resourceVersion (default 90 s), so a half-dead connection (nothing arrives, nothing closes)
   * does not keep the cache stale. Silence alone is no fault: the API server sends bookmarks only
   * roughly every minute and may skip one (kube-apiserver 1.36, idle: a label-selected watch's
   * first periodic bookmark came after 121 s), so a restart after silence is routine and logged
   * at debug; it costs one watch request.
   */
  watchdogMs?: number;
  /**
   * Reconnect backoff (defaults: 250 ms doubling up to 30 s, jittered; at most 5 s while the
   * API server is away rather than refusing).
   */
  backoff?: BackoffOptions;
  pageSize?: number;
  log?: Logger;
  /**
   * Deep-freezes every cached object, so code that mutates one (instead of copying it) fails
   * loudly. Tests turn it on; it costs a walk of each object, so production leaves it off.
   */
  freeze?: boolean;
}

/**
 * What reconcilers may read of a cache: lookups and indexes, never the informer itself (no
 * `start`/`stop`). Cached objects are shared by every reader and must not be mutated.
 */
export interface Store<T extends KubeObject = KubeObject> {
  get(namespace: string | undefined, name: string): T | undefined;
  getByKey(key: string): T | undefined;
  /** Cached objects, optionally of one namespace. */
  list(namespace?: string): T[];
  /** Keys (`namespace/name`) of the objects an index maps to `value`. */
  byIndex(index: string, value: string): string[];
}

/** Maps an object to the values it is found under in an index (e.g. the Secret it reads). */
export type IndexFunc<T> = (obj: T) => readonly string[];

/**
 * The keys an index maps a value to: most values name one object (a platform id, an owner mark),
 * kept as its key alone; a Set only for values several objects share. At 1,000 tenants a Set per
 * value was about 150 bytes of each index entry, two thirds of what the indexes held.
 */
type IndexKeys = string | Set<string>;

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

interface WatchStatus {
  code?: number;
  reason?: string;
  message?: string;
}

class GoneError extends Error {}

/** The server refused the watch with an ERROR event: it answered, so this is no outage. */
class WatchStatusError extends Error {}

/**
 * A stream the server took carried nothing (no event, no bookmark) for the watchdog's time. On an
 * idle cluster that is normal: the API server sends no bookmark while nothing changes, so the
 * stream is restarted from its resourceVersion at once, as routine; only a half-dead connection
 * is told from an idle one by the restart itself (the new watch fails like any other).
 */
class WatchSilentError extends Error {}

/** Longest reconnect delay while the API server is away (unreachable, or 502-504). */
const awayRetryMaxMs = 5_000;

/**
 * The API server is away rather than refusing us: no answer (refused, reset, a stream cut or
 * gone silent) or 502-504. An answer such as 403 or 404 is no outage and backs off fully.
 */
function serverAway(err: unknown): boolean {
  if (isApiServerUnavailable(err)) return true;
  if (err instanceof WatchStatusError) return false;
  // client-node's Watch rejects a non-200 answer with its status code; anything else is transport.
  const status = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof status !== "number" || (status >= 502 && status <= 504);
}

/** Counters that tell how the informer kept up (also useful in tests and debugging). */
export interface InformerStats {
  lists: number;
  watches: number;
  reconnects: number;
  /** Watches restarted after carrying nothing for the watchdog's time (idle, or half-dead). */
  silentRestarts: number;
}

export class Informer<T extends KubeObject = KubeObject> implements Store<T> {
  readonly kind: ResourceKind;
  readonly stats: InformerStats = { lists: 0, watches: 0, reconnects: 0, silentRestarts: 0 };
  private readonly client: KubeClient;
  private readonly options: InformerOptions;
  private readonly log: Logger;
  private readonly cache = new Map<string, T>();
  /** index name -> (value -> keys), kept in step with the cache. */
  private readonly indexes = new Map<
    string,
    { fn: (obj: KubeObject) => readonly string[]; byValue: Map<string, IndexKeys> }
  >();
  private readonly handlers: InformerHandlers<T>[] = [];
  private readonly scopes: (string | undefined)[];
  private readonly syncedScopes = new Set<string | undefined>();
  private readonly syncWaiters: (() => void)[] = [];
  private readonly streams = new Set<AbortController>();
  private readonly stopController = new AbortController();
  private loops: Promise<void>[] = [];

  constructor(client: KubeClient, kind: ResourceKind, options: InformerOptions = {}) {
    this.client = client;
    this.kind = kind;
    this.options = options;
    this.log = (options.log ?? silentLogger).child({ informer: kind.plural });
    const namespaces = kind.namespaced === false ? [] : (options.namespaces ?? []);
    this.scopes = namespaces.length > 0 ? [...new Set(namespaces)] : [undefined];
  }

  /** Registers handlers; register before `start` to see the initial list as adds. */
  on(handlers: InformerHandlers<T>): void {
    this.handlers.push(handlers);
  }

  /** Adds an index (before `start`, so the initial list is indexed too). */
  addIndex(name: string, fn: IndexFunc<T>): void {
    if (this.indexes.has(name)) throw new Error(`index ${name} of ${this.kind.plural} is defined twice`);
    // Stored untyped so an Informer<T> stays usable as an Informer<KubeObject>; only T reaches it.
    this.indexes.set(name, { fn: fn as (obj: KubeObject) => readonly string[], byValue: new Map() });
  }

  /**
   * Adds an index for a reader sharing this informer (shared-informers.ts), or finds the one another
   * reader added with the same name and function; a name taken by another function gets a suffix.
   * Returns the index's name here, for `byIndex`.
   */
  addSharedIndex(name: string, fn: IndexFunc<T>): string {
    for (let n = 1; ; n++) {
      const here = n === 1 ? name : `${name}#${n}`;
      const known = this.indexes.get(here);
      if (!known) {
        this.addIndex(here, fn);
        return here;
      }
      if (known.fn === fn) return here;
    }
  }

  byIndex(index: string, value: string): string[] {
    const idx = this.indexes.get(index);
    if (!idx) throw new Error(`${this.kind.plural} has no index ${index}`);
    const keys = idx.byValue.get(value);
    return keys === undefined ? [] : typeof keys === "string" ? [keys] : [...keys];
  }

  /** The read-only view handed to reconcilers. */
  get store(): Store<T> {
    return {
      get: (namespace, name) => this.get(namespace, name),
      getByKey: (key) => this.getByKey(key),
      list: (namespace) => this.list(namespace),
      byIndex: (index, value) => this.byIndex(index, value),
    };
  }

  private reindex(key: string, old: T | undefined, obj: T | undefined): void {
    for (const { fn, byValue } of this.indexes.values()) {
      for (const value of old ? fn(old) : []) {
        const keys = byValue.get(value);
        if (keys === key) byValue.delete(value);
        else if (typeof keys === "object") {
          keys.delete(key);
          if (keys.size === 1) byValue.set(value, keys.values().next().value ?? "");
        }
      }
      for (const value of obj ? fn(obj) : []) {
        const keys = byValue.get(value);
        if (keys === undefined) byValue.set(value, key);
        else if (typeof keys === "object") keys.add(key);
        else if (keys !== key) byValue.set(value, new Set([keys, key]));
      }
    }
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.cache.get(namespace ? `${namespace}/${name}` : name);
  }

  getByKey(key: string): T | undefined {
    return this.cache.get(key);
  }

  /** Cached objects, optionally of one namespace. */
  list(namespace?: string): T[] {
    const all = [...this.cache.values()];
    return namespace === undefined ? all : all.filter((o) => o.metadata.namespace === namespace);
  }

  keys(): string[] {
    return [...this.cache.keys()];
  }

  /** True once every watched namespace has been listed at least once. */
  get synced(): boolean {
    return this.syncedScopes.size === this.scopes.length;
  }

  waitForSync(): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  /** Whether `start` was called: handlers and indexes added from now on miss the first list. */
  get started(): boolean {
    return this.loops.length > 0;
  }

  start(): void {
    if (this.started) return;
    this.loops = this.scopes.map((scope) => this.run(scope));
  }

  async stop(): Promise<void> {
    this.stopController.abort();
    for (const stream of this.streams) stream.abort();
    await Promise.all(this.loops);
  }

  private get stopped(): boolean {
    return this.stopController.signal.aborted;
  }

  private async run(scope: string | undefined): Promise<void> {
    let resourceVersion: string | undefined;
    let failures = 0;
    // Set when a list or watch could not reach the server; cleared (and reported) when it answers.
    let unreachable = false;
    const answered = (): void => {
      if (!unreachable) return;
      unreachable = false;
      this.log.info({ namespace: scope }, "API server reachable again");
      for (const h of this.handlers) h.reconnected?.();
    };
    while (!this.stopped) {
      let accepted = false;
      try {
        if (resourceVersion === undefined) {
          resourceVersion = await this.relist(scope);
          this.markSynced(scope);
          answered();
        }
        await this.watchOnce(
          scope,
          resourceVersion,
          (rv) => (resourceVersion = rv),
          () => {
            accepted = true;
            answered();
          },
        );
        // The server ends watches routinely (timeoutSeconds); resume at once from where we were.
        failures = 0;
      } catch (err) {
        if (this.stopped) break;
        if (err instanceof GoneError) {
          // Our resourceVersion is older than the server remembers: relist now, no backoff.
          this.log.info({ namespace: scope }, "watch expired (410); relisting");
          resourceVersion = undefined;
          continue;
        }
        if (err instanceof WatchSilentError && accepted) {
          // Taken by the server, then nothing to say: no failure, so no backoff and no warning.
          this.stats.silentRestarts++;
          failures = 0;
          this.log.debug(
            { namespace: scope, err: err.message },
            "watch idle; restarting it from where it was",
          );
          continue;
        }
        this.stats.reconnects++;
        const away = serverAway(err);
        if (away) {
          unreachable = true;
          // The server took this watch and then the connection broke (a restart, a cut): the
          // path worked a moment ago, so the reconnect starts from the shortest delay rather
          // than where an earlier outage left the backoff.
          if (accepted) failures = 0;
        }
        // A watch that keeps failing from one resourceVersion (e.g. "too large" after the server
        // restored an older etcd) may never succeed from it: start over with a list.
        if (failures >= 5) resourceVersion = undefined;
        const backoff = { baseDelayMs: 250, maxDelayMs: 30_000, ...this.options.backoff };
        // While the server is away, look again every few seconds (a refused connection costs next
        // to nothing), so the cache, and the work waiting for the server, resume soon after it
        // is back rather than up to a full backoff later.
        if (away) backoff.maxDelayMs = Math.min(backoff.maxDelayMs, awayRetryMaxMs);
        const delay = backoffDelay(failures++, backoff);
        this.log.warn(
          {
            namespace: scope,
            err: err instanceof Error ? err.message : String(err),
            retryInMs: Math.round(delay),
          },
          "watch failed; reconnecting",
        );
        await pause(delay, this.stopController.signal);
      }
    }
  }

  /**
   * What is cached of an object as listed or watched. A metadata-only answer's objects are
   * PartialObjectMetadata; they are cached as objects of this kind with what `metadataOnly` keeps
   * of their metadata (and so is a whole object, should a server answer one after all).
   */
  private trim(obj: T): T {
    if (!this.options.metadataOnly) return (this.options.transform ?? stripManagedFields)(obj) as T;
    const received = metadataOnly({
      apiVersion: apiVersionOf(this.kind),
      kind: this.kind.kind,
      metadata: obj.metadata,
    });
    return (this.options.transform ? this.options.transform(received) : received) as T;
  }

  private inScope(obj: T, scope: string | undefined): boolean {
    return scope === undefined || obj.metadata.namespace === scope;
  }

  /** Lists the scope page by page, replaces its part of the cache and emits the difference. */
  private async relist(scope: string | undefined): Promise<string> {
    this.stats.lists++;
    const items: T[] = [];
    let continueToken: string | undefined;
    let resourceVersion: string | undefined;
    do {
      const page = await this.client.list<T>(this.kind, {
        namespace: scope,
        labelSelector: this.options.labelSelector,
        limit: this.options.pageSize ?? 500,
        continue: continueToken,
        signal: this.stopController.signal,
        metadataOnly: this.options.metadataOnly,
      });
      // List items carry no apiVersion/kind; fill them in so cached objects are complete. Each page
      // is trimmed as it arrives, so a relist never holds every whole object at once.
      // A metadata-only list of nothing answers `items: null` (the API server's nil slice).
      for (const item of page.items ?? []) {
        items.push(this.trim({ apiVersion: apiVersionOf(this.kind), kind: this.kind.kind, ...item }));
      }
      continueToken = page.metadata.continue || undefined;
      resourceVersion = page.metadata.resourceVersion;
    } while (continueToken);

    const listed = new Set<string>();
    for (const obj of items) {
      const key = objectKey(obj);
      listed.add(key);
      this.upsert(key, obj);
    }
    for (const [key, obj] of [...this.cache]) {
      if (this.inScope(obj, scope) && !listed.has(key)) this.remove(key, obj);
    }
    return resourceVersion ?? "";
  }

  private markSynced(scope: string | undefined): void {
    this.syncedScopes.add(scope);
    if (this.synced) for (const waiter of this.syncWaiters.splice(0)) waiter();
  }

  private upsert(key: string, obj: T): void {
    const old = this.cache.get(key);
    if (old?.metadata.resourceVersion === obj.metadata.resourceVersion && old !== undefined) return;
    if (this.options.freeze) deepFreeze(obj);
    this.cache.set(key, obj);
    this.reindex(key, old, obj);
    for (const h of this.handlers) {
      if (old === undefined) h.add?.(obj);
      else h.update?.(old, obj);
    }
  }

  private remove(key: string, obj: T): void {
    const old = this.cache.get(key) ?? obj;
    if (!this.cache.delete(key)) return;
    this.reindex(key, old, undefined);
    for (const h of this.handlers) h.delete?.(old);
  }

  /**
   * One watch stream. `onAccepted` runs when the server has taken the watch (a 200 answer).
   * Resolves when the server ends it, throws GoneError on 410, WatchStatusError on any other
   * ERROR event and the transport's error when it broke.
   */
  private watchOnce(
    scope: string | undefined,
    resourceVersion: string,
    setResourceVersion: (rv: string) => void,
    onAccepted: () => void,
  ): Promise<void> {
    const watchdogMs = this.options.watchdogMs ?? 90_000;
    const timeout = this.options.watchTimeoutSeconds ?? 300;
    this.stats.watches++;
    return new Promise<void>((resolve, reject) => {
      let finished = false;
      let stream: AbortController | undefined;
      let watchdog: NodeJS.Timeout | undefined;
      const finish = (err: unknown): void => {
        if (finished) return;
        finished = true;
        clearTimeout(watchdog);
        this.stopController.signal.removeEventListener("abort", onStop);
        if (stream) {
          stream.abort();
          this.streams.delete(stream);
        }
        if (err) reject(err instanceof Error ? err : new Error("watch failed", { cause: err }));
        else resolve();
      };
      const onStop = (): void => finish(null);
      const kick = (): void => {
        clearTimeout(watchdog);
        watchdog = setTimeout(
          () => finish(new WatchSilentError(`watch silent for ${watchdogMs} ms`)),
          watchdogMs,
        );
      };
      this.stopController.signal.addEventListener("abort", onStop);
      kick();
      const onEvent = (type: string, raw: unknown): void => {
        if (finished) return;
        kick();
        if (type === "ERROR") {
          const status = raw as WatchStatus;
          finish(
            status.code === 410
              ? new GoneError(status.message ?? "gone")
              : new WatchStatusError(
                  `watch error ${status.code ?? "?"} ${status.reason ?? ""}: ${status.message ?? ""}`,
                ),
          );
          return;
        }
        const obj = type === "BOOKMARK" ? (raw as T) : this.trim(raw as T);
        const rv = obj.metadata?.resourceVersion;
        if (type === "BOOKMARK") {
          if (rv) setResourceVersion(rv);
          return;
        }
        if (!this.inScope(obj, scope)) return;
        const key = objectKey(obj);
        if (type === "ADDED" || type === "MODIFIED") this.upsert(key, obj);
        else if (type === "DELETED") this.remove(key, obj);
        if (rv) setResourceVersion(rv);
      };
      const done = (err: unknown): void => {
        const status = (err as { statusCode?: number } | null)?.statusCode;
        finish(status === 410 ? new GoneError("gone") : err);
      };
      this.client
        .watch(
          this.kind,
          scope,
          {
            resourceVersion,
            allowWatchBookmarks: true,
            timeoutSeconds: Math.floor(timeout * (1 + Math.random())),
            labelSelector: this.options.labelSelector,
          },
          onEvent,
          done,
          watchdogMs + 1_000,
          { metadataOnly: this.options.metadataOnly },
        )
        .then(
          (controller) => {
            stream = controller;
            if (finished) {
              controller.abort();
              return;
            }
            // client-node hands the stream back only once the server answered 200 (a refused
            // or failed request has called `done` already, so `finished` is set).
            this.streams.add(controller);
            onAccepted();
          },
          (err: unknown) => finish(err),
        );
    });
  }
}
