// The standard conditions every managed kind shows, in the shape kstatus (Flux), Argo CD health
// checks and `kubectl wait --for=condition=Ready` read:
// - Ready: the platform object is as declared and usable;
// - Synced: the last attempt to apply the spec worked (True) or why not (False);
// - Reconciling (kstatus): work is under way that will change the status by itself;
// - Stalled (kstatus): nothing will change until the spec does.
// Each carries the generation it was computed for.
import { setCondition, type Condition } from "../../runtime/index.ts";
import type { Verdict } from "./kind.ts";

export interface Conditions {
  ready: Verdict;
  /** Undefined keeps Synced as it was. */
  synced?: Verdict;
  reconciling?: boolean;
  stalled?: boolean;
}

export function standardConditions(
  existing: readonly Condition[] | undefined,
  generation: number | undefined,
  c: Conditions,
  now: Date,
): Condition[] {
  const set = (list: Condition[], type: string, [status, reason, message]: Verdict) =>
    setCondition(list, { type, status, reason, message, observedGeneration: generation }, now);
  let list = set([...(existing ?? [])], "Ready", c.ready);
  if (c.synced) list = set(list, "Synced", c.synced);
  const [, readyReason, readyMessage] = c.ready;
  list = c.reconciling
    ? set(list, "Reconciling", ["True", readyReason, readyMessage])
    : list.filter((x) => x.type !== "Reconciling");
  list = c.stalled
    ? set(list, "Stalled", ["True", readyReason, readyMessage])
    : list.filter((x) => x.type !== "Stalled");
  return list;
}
