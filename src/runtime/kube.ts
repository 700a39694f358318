// A thin REST client over the kubeconfig's authentication. Objects stay plain
// JSON (the generated client-node APIs turn timestamps into Date objects and
// cannot send JSON patches to arbitrary kinds); watches go through client-node's
// Watch so TLS and credentials are handled in one place.
import { HttpMethod, RequestContext, Watch, type KubeConfig } from "@kubernetes/client-node";
import { fetch } from "undici";

/** Identifies a resource type on the API server. `namespaced` defaults to true. */
export interface ResourceKind {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced?: boolean;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
}

export interface KubeList<T> {
  metadata: { resourceVersion?: string; continue?: string };
  items: T[];
}

export const ContentType = {
  JsonPatch: "application/json-patch+json",
  MergePatch: "application/merge-patch+json",
  Json: "application/json",
} as const;
export type ContentType = (typeof ContentType)[keyof typeof ContentType];

export function apiVersionOf(kind: ResourceKind): string {
  return kind.group ? `${kind.group}/${kind.version}` : kind.version;
}

/** `namespace/name`, or `name` for cluster-scoped objects: the work queue's key. */
export function objectKey(obj: KubeObject): string {
  const { namespace, name } = obj.metadata;
  return namespace ? `${namespace}/${name ?? ""}` : (name ?? "");
}

export function parseKey(key: string): { namespace: string | undefined; name: string } {
  const slash = key.indexOf("/");
  return slash < 0
    ? { namespace: undefined, name: key }
    : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

export function resourcePath(
  kind: ResourceKind,
  namespace?: string,
  name?: string,
  subresource?: string,
): string {
  let path = kind.group ? `/apis/${kind.group}/${kind.version}` : `/api/${kind.version}`;
  if (namespace && kind.namespaced !== false) path += `/namespaces/${encodeURIComponent(namespace)}`;
  path += `/${kind.plural}`;
  if (name) path += `/${encodeURIComponent(name)}`;
  if (subresource) path += `/${subresource}`;
  return path;
}

/** An API server answer other than 2xx. `statusCode` and `reason` come from the server's Status. */
export class KubeApiError extends Error {
  readonly statusCode: number;
  readonly reason: string;
  /** Conflicts and server-side hiccups are worth retrying with backoff; the runtime does so by default. */
  readonly retryable: boolean;
  constructor(statusCode: number, reason: string, message: string) {
    super(message);
    this.name = "KubeApiError";
    this.statusCode = statusCode;
    this.reason = reason;
    this.retryable = statusCode === 409 || statusCode === 429 || statusCode >= 500;
  }
}

export function isNotFound(err: unknown): boolean {
  return err instanceof KubeApiError && err.statusCode === 404;
}

export function isConflict(err: unknown): boolean {
  return err instanceof KubeApiError && err.statusCode === 409;
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: ContentType;
  signal?: AbortSignal;
}

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  limit?: number;
  continue?: string;
  signal?: AbortSignal;
}

export type WatchCallback = (type: string, object: unknown) => void;

export class KubeClient {
  readonly kubeConfig: KubeConfig;
  /** Deadline of a single non-watch request. */
  readonly requestTimeoutMs: number;

  constructor(kubeConfig: KubeConfig, options: { requestTimeoutMs?: number } = {}) {
    this.kubeConfig = kubeConfig;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  }

  private server(): string {
    const cluster = this.kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error("the kubeconfig has no current cluster");
    return cluster.server;
  }

  async request<T>(method: HttpMethod, path: string, options: RequestOptions = {}): Promise<T> {
    const url = new URL(this.server() + path);
    for (const [k, v] of Object.entries(options.query ?? {}))
      if (v !== undefined) url.searchParams.set(k, String(v));
    const ctx = new RequestContext(url.toString(), method);
    await this.kubeConfig.applySecurityAuthentication(ctx);
    const headers: Record<string, string> = { ...ctx.getHeaders(), accept: "application/json" };
    if (options.body !== undefined) headers["content-type"] = options.contentType ?? ContentType.Json;
    const timeout = AbortSignal.timeout(this.requestTimeoutMs);
    const response = await fetch(url, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      dispatcher: ctx.getDispatcher(),
      signal: options.signal ? AbortSignal.any([options.signal, timeout]) : timeout,
    });
    const text = await response.text();
    if (!response.ok) {
      let reason = response.statusText;
      let message = "";
      try {
        const status = JSON.parse(text) as { reason?: string; message?: string };
        reason = status.reason ?? reason;
        message = status.message ?? "";
      } catch {
        // not a Status object; the status line is all we have
      }
      throw new KubeApiError(
        response.status,
        reason,
        `${method} ${path}: ${response.status} ${reason}: ${message}`,
      );
    }
    return (text ? JSON.parse(text) : undefined) as T;
  }

  async get<T extends KubeObject>(
    kind: ResourceKind,
    namespace: string | undefined,
    name: string,
  ): Promise<T | undefined> {
    try {
      return await this.request<T>(HttpMethod.GET, resourcePath(kind, namespace, name));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  list<T extends KubeObject>(kind: ResourceKind, options: ListOptions = {}): Promise<KubeList<T>> {
    return this.request(HttpMethod.GET, resourcePath(kind, options.namespace), {
      query: { labelSelector: options.labelSelector, limit: options.limit, continue: options.continue },
      signal: options.signal,
    });
  }

  create<T extends KubeObject>(kind: ResourceKind, obj: T): Promise<T> {
    return this.request(HttpMethod.POST, resourcePath(kind, obj.metadata.namespace), { body: obj });
  }

  replace<T extends KubeObject>(kind: ResourceKind, obj: T): Promise<T> {
    return this.request(HttpMethod.PUT, resourcePath(kind, obj.metadata.namespace, obj.metadata.name), {
      body: obj,
    });
  }

  patch<T extends KubeObject>(
    kind: ResourceKind,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    contentType: ContentType,
    subresource?: string,
  ): Promise<T> {
    return this.request(HttpMethod.PATCH, resourcePath(kind, namespace, name, subresource), {
      body: patch,
      contentType,
    });
  }

  async delete(kind: ResourceKind, namespace: string | undefined, name: string): Promise<void> {
    try {
      await this.request(HttpMethod.DELETE, resourcePath(kind, namespace, name));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /**
   * Opens a watch stream. `done` is called once, when the stream ends for any
   * reason. `inactivityTimeoutMs` aborts a stream that has been silent that long.
   */
  async watch(
    kind: ResourceKind,
    namespace: string | undefined,
    query: Record<string, string | number | boolean | undefined>,
    onEvent: WatchCallback,
    done: (err: unknown) => void,
    inactivityTimeoutMs: number,
  ): Promise<AbortController> {
    const watch = new Watch(this.kubeConfig);
    // client-node 2.0.1 aborts a stream after 30 s without data (a private
    // field); we own the silence watchdog, so make the library's the same.
    (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = inactivityTimeoutMs;
    return watch.watch(resourcePath(kind, namespace), query, (type, obj) => onEvent(type, obj), done);
  }
}
