// Keeps a local cache of one kind in sync with the API server: list, then
// watch from the list's resourceVersion with bookmarks. Unlike client-node's
// stock informer it never gives up: a closed stream resumes from the last
// resourceVersion, a 410 relists and diffs the cache (so objects deleted while
// disconnected produce deletes), any other error reconnects with jittered
// backoff, and a watchdog restarts streams that went silent.
import { backoffDelay, type BackoffOptions } from "./workqueue.ts";
import { apiVersionOf, objectKey, type KubeClient, type KubeObject, type ResourceKind } from "./kube.ts";
import { silentLogger, type Logger } from "./log.ts";
import { pause } from "./pause.ts";

export interface InformerHandlers<T> {
  add?(obj: T): void;
  update?(oldObj: T, newObj: T): void;
  delete?(obj: T): void;
}

export interface InformerOptions {
  /** Namespaces to watch; empty or undefined watches all namespaces. */
  namespaces?: string[];
  labelSelector?: string;
  /** Server-side watch timeout; each watch picks a random value in [t, 2t) like client-go. */
  watchTimeoutSeconds?: number;
  /** A stream with no event (bookmarks included) for this long is restarted. */
  watchdogMs?: number;
  /** Reconnect backoff (defaults: 250 ms doubling up to 30 s, jittered). */
  backoff?: BackoffOptions;
  pageSize?: number;
  log?: Logger;
}

interface WatchStatus {
  code?: number;
  reason?: string;
  message?: string;
}

class GoneError extends Error {}

/** Counters that tell how the informer kept up (also useful in tests and debugging). */
export interface InformerStats {
  lists: number;
  watches: number;
  reconnects: number;
}

export class Informer<T extends KubeObject = KubeObject> {
  readonly kind: ResourceKind;
  readonly stats: InformerStats = { lists: 0, watches: 0, reconnects: 0 };
  private readonly client: KubeClient;
  private readonly options: InformerOptions;
  private readonly log: Logger;
  private readonly cache = new Map<string, T>();
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

  start(): void {
    if (this.loops.length > 0) return;
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
    while (!this.stopped) {
      try {
        if (resourceVersion === undefined) {
          resourceVersion = await this.relist(scope);
          this.markSynced(scope);
        }
        const opened = await this.watchOnce(scope, resourceVersion, (rv) => (resourceVersion = rv));
        // The server ends watches routinely (timeoutSeconds); resume at once from where we were.
        if (opened) failures = 0;
      } catch (err) {
        if (this.stopped) break;
        if (err instanceof GoneError) {
          // Our resourceVersion is older than the server remembers: relist now, no backoff.
          this.log.info({ namespace: scope }, "watch expired (410); relisting");
          resourceVersion = undefined;
          continue;
        }
        this.stats.reconnects++;
        // A watch that keeps failing from one resourceVersion (e.g. "too large" after the server
        // restored an older etcd) may never succeed from it: start over with a list.
        if (failures >= 5) resourceVersion = undefined;
        const delay = backoffDelay(failures++, {
          baseDelayMs: 250,
          maxDelayMs: 30_000,
          ...this.options.backoff,
        });
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
      });
      items.push(...page.items);
      continueToken = page.metadata.continue || undefined;
      resourceVersion = page.metadata.resourceVersion;
    } while (continueToken);

    const listed = new Set<string>();
    for (const item of items) {
      // List items carry no apiVersion/kind; fill them in so cached objects are complete.
      const obj = { apiVersion: apiVersionOf(this.kind), kind: this.kind.kind, ...item };
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
    this.cache.set(key, obj);
    for (const h of this.handlers) {
      if (old === undefined) h.add?.(obj);
      else h.update?.(old, obj);
    }
  }

  private remove(key: string, obj: T): void {
    const old = this.cache.get(key) ?? obj;
    if (!this.cache.delete(key)) return;
    for (const h of this.handlers) h.delete?.(old);
  }

  /**
   * One watch stream. Resolves when the server ends it (true if any event was
   * seen), throws GoneError on 410 and any other error when it broke.
   */
  private watchOnce(
    scope: string | undefined,
    resourceVersion: string,
    setResourceVersion: (rv: string) => void,
  ): Promise<boolean> {
    const watchdogMs = this.options.watchdogMs ?? 180_000;
    const timeout = this.options.watchTimeoutSeconds ?? 300;
    this.stats.watches++;
    return new Promise<boolean>((resolve, reject) => {
      let finished = false;
      let sawEvent = false;
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
        else resolve(sawEvent);
      };
      const onStop = (): void => finish(null);
      const kick = (): void => {
        clearTimeout(watchdog);
        watchdog = setTimeout(() => finish(new Error(`watch silent for ${watchdogMs} ms`)), watchdogMs);
      };
      this.stopController.signal.addEventListener("abort", onStop);
      kick();
      const onEvent = (type: string, raw: unknown): void => {
        if (finished) return;
        kick();
        sawEvent = true;
        if (type === "ERROR") {
          const status = raw as WatchStatus;
          finish(
            status.code === 410
              ? new GoneError(status.message ?? "gone")
              : new Error(
                  `watch error ${status.code ?? "?"} ${status.reason ?? ""}: ${status.message ?? ""}`,
                ),
          );
          return;
        }
        const obj = raw as T;
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
        )
        .then(
          (controller) => {
            stream = controller;
            if (finished) controller.abort();
            else this.streams.add(controller);
          },
          (err: unknown) => finish(err),
        );
    });
  }
}
