// Shards: instances of the operator that split the objects of each kind among them by label, as
// Flux's controllers do with --watch-label-selector. Unlike Flux, every instance caches every
// object of the kinds it watches and reconciles only those its selector matches: what one object
// may do is decided by looking at others in the caches (which resource claims a platform object
// first, who holds what another namespace uses), and a shard that did not see the objects of the
// other shards would let a second claimant through. So shards divide the work (reconciles,
// platform requests, CPU), not the caches' memory.
//
// An object whose label moves it from one shard to another must never be acted on by both. The
// shard it left stops at the watch event, but a reconcile of it may be running there; the shard it
// joins holds it for `handoverMs` (longer than a reconcile runs) before its first reconcile. What
// remains of the race (a move while the joining shard was down) is the crash-safe creates' case:
// an intent recorded before a create, found again by the owner mark, which both shards share.
import type { KubeObject } from "./kube.ts";
import type { LabelSelector } from "./label-selector.ts";

export interface Shard {
  /** The objects this instance reconciles. */
  selector: LabelSelector;
  /** How long an object that came from another shard waits before its first reconcile here. */
  handoverMs: number;
}

/** Whether an update moved the object into this shard (its labels matched another's before). */
export function handedOver(shard: Shard, old: KubeObject, current: KubeObject): boolean {
  return !shard.selector.matches(old.metadata.labels) && shard.selector.matches(current.metadata.labels);
}
