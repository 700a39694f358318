// Writes an object's status subresource. A write that would change nothing is
// skipped (no resourceVersion churn, no watch event, no reconcile loop). The
// write is a merge patch, by default without a resourceVersion precondition, so
// it cannot lose an optimistic-lock race (a 409 from the server is retried
// anyway); intent that crash safety depends on is written with one.
import { ContentType, isConflict, type KubeClient, type KubeObject, type ResourceKind } from "./kube.ts";

/** Deep equality of JSON values, ignoring object key order. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const keys = new Set(
    [...Object.keys(ao), ...Object.keys(bo)].filter((k) => ao[k] !== undefined || bo[k] !== undefined),
  );
  for (const k of keys) if (!jsonEqual(ao[k], bo[k])) return false;
  return true;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A JSON merge patch (RFC 7386) turning `current` into `desired`: changed keys set, removed keys nulled. */
export function mergePatchFor(
  current: Record<string, unknown>,
  desired: Record<string, unknown>,
): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(desired)) {
    if (v === undefined || jsonEqual(current[k], v)) continue;
    const was = current[k];
    patch[k] = isPlainObject(was) && isPlainObject(v) ? mergePatchFor(was, v) : v;
  }
  for (const k of Object.keys(current))
    if (desired[k] === undefined && current[k] !== undefined) patch[k] = null;
  return patch;
}

export interface StatusPatchOptions {
  /**
   * Write only if the object's resourceVersion is still the one given (a 409 otherwise, not
   * retried: the caller re-reads). For intent that crash safety depends on.
   */
  precondition?: boolean;
}

export class StatusWriter {
  private readonly client: KubeClient;
  private readonly kind: ResourceKind;
  /** Writes actually sent, for metrics and tests. */
  writes = 0;

  constructor(client: KubeClient, kind: ResourceKind) {
    this.client = client;
    this.kind = kind;
  }

  /**
   * Makes `obj`'s status equal to `status` (the whole desired status). Returns
   * the updated object, or `obj` itself when nothing had to change.
   */
  async patch<T extends KubeObject & { status?: unknown }>(
    obj: T,
    status: Record<string, unknown>,
    options: StatusPatchOptions = {},
  ): Promise<T> {
    const current = (obj.status ?? {}) as Record<string, unknown>;
    if (jsonEqual(current, status)) return obj;
    const body: Record<string, unknown> = { status: mergePatchFor(current, status) };
    if (options.precondition) {
      // The API server refuses the write (409) unless the object is still the one it was computed
      // from: a late write of a deposed leader, or one based on a stale read, cannot land.
      body.metadata = { resourceVersion: obj.metadata.resourceVersion };
    }
    for (let attempt = 0; ; attempt++) {
      try {
        this.writes++;
        return await this.client.patch<T>(
          this.kind,
          obj.metadata.namespace,
          obj.metadata.name ?? "",
          body,
          ContentType.MergePatch,
          "status",
        );
      } catch (err) {
        if (!isConflict(err) || options.precondition || attempt >= 4) throw err;
      }
    }
  }
}
