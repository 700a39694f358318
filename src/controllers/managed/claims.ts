// What a resource holds in the cluster besides its platform object (withClaims): a branch's one
// read-write endpoint, say. A second resource claiming the same is refused before its create, in
// the kind's words, and the message names the first only when both are in one namespace.
import { objectKey, type KubeObject } from "../../runtime/index.ts";
import type { Refusal } from "./refusal.ts";

export interface Claims<Spec, Status> {
  /** What the resource claims besides its object's id (`ownership.ts` indexes them with it). */
  of(spec: Spec, status: Status): string[];
  /**
   * The refusal when another resource goes first for `claim`; `rival` is its `Kind namespace/name`
   * when it is in this resource's namespace, undefined when it is another namespace's.
   */
  refused(spec: Spec, claim: string, rival: string | undefined): Refusal;
}

/** The rival as a message may name it: only in the resource's own namespace. */
export function visibleRival(obj: KubeObject, rival: KubeObject): string | undefined {
  return rival.metadata.namespace === obj.metadata.namespace
    ? `${rival.kind ?? "resource"} ${objectKey(rival)}`
    : undefined;
}
