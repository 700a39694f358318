// Held means held, for reading too (withUses, and the observe-only check in lifecycle.ts): a
// platform object a resource of one namespace holds (made or adopted) is its namespace's. A
// resource of another namespace that would attach to it (an endpoint on a branch), copy its data
// (a branch or a snapshot of it) or observe it is refused, with nothing sent and a message naming
// no other namespace, unless the holder consents in its own spec (`spec.sharedWith`: namespaces
// and what they may do). Objects no resource holds stay usable by every namespace the operator's
// grants allow. The anchor is Gateway API's ReferenceGrant (the target's side says who may refer
// to it); here the holder is a resource of this operator, so its consent is a field of its own
// rather than a kind beside it.
import type { Use } from "../../api/fields.ts";
import type { KubeObject, ResourceKind, Store } from "../../runtime/index.ts";
import { Refusal } from "./refusal.ts";

export type { Use };

/** The holder's consent, as its spec says it. */
export interface Sharing {
  namespace: string;
  /** Omitted: every use. */
  uses?: readonly Use[] | undefined;
}

/** A kind whose resources hold platform objects another kind may use. */
export interface Holder {
  kind: ResourceKind;
  /**
   * The platform ids a resource of this kind holds (what it made or adopted). A function of its
   * own (no `this`): it indexes the kind's shared cache once for every kind using what it holds.
   */
  holds: (obj: KubeObject) => string[];
  /** Whom it shares them with (its spec.sharedWith). */
  sharedWith(obj: KubeObject): readonly Sharing[];
}

/** A platform object of another kind this resource uses, named by a field of its spec. */
export interface Uses<Spec, Status> {
  /** The field, as messages name it: `spec.branchId`. */
  field: string;
  /** What the resource does with it. */
  use: Use;
  /** What the object is called, in messages: "branch". */
  noun: string;
  id(spec: Spec, status: Status): string | undefined;
  /** Only before the create: a copy once made stays made (Derive). */
  createOnly?: boolean;
  holders: readonly Holder[];
}

/** Index of a holder kind's cache: `id` of each platform object its resources hold. */
export const holdsIndex = (kind: ResourceKind): string => `holds:${kind.group}/${kind.kind}`;

/** Whether `sharing` lets `namespace` do `use`. */
export function shares(sharing: readonly Sharing[], namespace: string | undefined, use: Use): boolean {
  return sharing.some((s) => s.namespace === namespace && (s.uses === undefined || s.uses.includes(use)));
}

/** The resources of another namespace holding `id` that do not share it with `namespace` for `use`. */
export function unsharedHolders(
  holders: readonly Holder[],
  id: string,
  namespace: string | undefined,
  use: Use,
  cache: (kind: ResourceKind) => Store<KubeObject>,
): KubeObject[] {
  return holders.flatMap((holder) => {
    const store = cache(holder.kind);
    return store
      .byIndex(holdsIndex(holder.kind), id)
      .map((key) => store.getByKey(key))
      .filter(
        (o): o is KubeObject =>
          o !== undefined &&
          o.metadata.namespace !== namespace &&
          !o.metadata.deletionTimestamp &&
          !shares(holder.sharedWith(o), namespace, use),
      );
  });
}

/** The refusal: what the spec names is another namespace's, not shared with this one. */
export function notShared(field: string, noun: string, id: string, use: Use): Refusal {
  const doing = { Observe: "observe", Attach: "attach to", Derive: "copy the data of" }[use];
  return new Refusal(
    "NotShared",
    "outside",
    `${field}: ${noun} ${id} is held by a resource in another namespace, which does not share it with this namespace (to ${doing} it, its holder adds this namespace to its spec.sharedWith); nothing is sent`,
  );
}

/**
 * Refuses what the resource would use of another namespace's without its consent; `creating`:
 * the uses that count only before a create count too.
 */
export function checkUses<Spec, Status>(
  uses: readonly Uses<Spec, Status>[],
  spec: Spec,
  status: Status,
  obj: KubeObject,
  creating: boolean,
  cache: (kind: ResourceKind) => Store<KubeObject>,
): void {
  for (const u of uses) {
    if (u.createOnly && !creating) continue;
    const id = u.id(spec, status);
    if (id === undefined) continue;
    if (unsharedHolders(u.holders, id, obj.metadata.namespace, u.use, cache).length > 0) {
      throw notShared(u.field, u.noun, id, u.use);
    }
  }
}
