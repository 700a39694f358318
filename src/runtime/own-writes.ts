// A controller's own writes (status, finalizer) as its watch echoes them back. A reconcile must
// not start from a cached copy older than its own last write: it would act on status it already
// superseded (a second restart, say). And the watch event of its own write carries nothing new:
// queuing it again would cost a reconcile per status write, and in a storm a place in the line.
// The echo can arrive before the write's own answer, so versions seen while a key is reconciled are
// held until the reconcile ends: only then is it known which were this controller's.
import { objectKey, type KubeObject } from "./kube.ts";

/** How long a reconcile waits for the cache to show this controller's own write before reading afresh. */
export const ownWriteWaitMs = 2_000;

export class OwnWrites {
  /** The last write per key until the cache shows it, and every version written since. */
  private readonly last = new Map<string, { resourceVersion: string; at: number; written: Set<string> }>();
  /** Keys being reconciled, with the versions their watch events brought meanwhile. */
  private readonly during = new Map<string, Set<string>>();

  /** Notes a write this controller made. */
  wrote(obj: KubeObject): void {
    const resourceVersion = obj.metadata.resourceVersion;
    if (!resourceVersion) return;
    const key = objectKey(obj);
    // Its echo came first: the cache shows this write already, and it is no one else's change.
    if (this.during.get(key)?.delete(resourceVersion)) {
      this.last.delete(key);
      return;
    }
    const written = this.last.get(key)?.written ?? new Set<string>();
    written.add(resourceVersion);
    this.last.set(key, { resourceVersion, at: Date.now(), written });
  }

  /** Notes that the cache shows `obj`; true when that version is one this controller wrote. */
  echoed(obj: KubeObject): boolean {
    const key = objectKey(obj);
    const own = this.last.get(key);
    const resourceVersion = obj.metadata.resourceVersion;
    if (!own || !resourceVersion || !own.written.has(resourceVersion)) return false;
    own.written.delete(resourceVersion);
    if (own.resourceVersion === resourceVersion) this.last.delete(key);
    return true;
  }

  /**
   * An update seen while `key` is reconciled is held (true) until the reconcile ends; otherwise
   * (false) it is the caller's to queue.
   */
  holdDuringReconcile(obj: KubeObject): boolean {
    const held = this.during.get(objectKey(obj));
    const resourceVersion = obj.metadata.resourceVersion;
    if (!held || !resourceVersion) return false;
    held.add(resourceVersion);
    return true;
  }

  /** A reconcile of `key` begins. */
  begin(key: string): void {
    this.during.set(key, new Set());
  }

  /** A reconcile of `key` ended: whether others changed it meanwhile (then it runs again). */
  end(key: string): boolean {
    const held = this.during.get(key);
    this.during.delete(key);
    return held !== undefined && held.size > 0;
  }

  /**
   * How a cached copy stands against this controller's last write: current, too old while the
   * watch may still deliver the write ("wait"), or too old for that ("stale": read it afresh).
   */
  standing(key: string, cached: KubeObject | undefined): "current" | "wait" | "stale" {
    const own = this.last.get(key);
    if (!cached || !own || cached.metadata.resourceVersion === own.resourceVersion) return "current";
    if (Date.now() - own.at < ownWriteWaitMs) return "wait";
    this.last.delete(key);
    return "stale";
  }

  /** The object was deleted: nothing of it is awaited. */
  forget(key: string): void {
    this.last.delete(key);
  }
}
