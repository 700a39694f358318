// One owner per platform object. A resource claims the object it adopted or created (its id) and
// whatever else its kind says it holds (a branch's one read-write endpoint); claims are an index of
// the kind's cache, so every replica sees the same. Of two resources claiming the same, the older
// (creationTimestamp, then UID) wins; the other is refused before anything is sent, and its
// deletion leaves the object alone. (Crossplane's external-name and its refusal to manage what
// another object claims are the anchor.)
import { objectKey, type KubeObject, type Store } from "../../runtime/index.ts";
import { Refusal } from "./refusal.ts";
import { parseOwnerMark } from "./installation.ts";

/** Index of a kind's cache: what each resource claims (`id:<platform id>`, and the kind's own claims). */
export const claimsIndex = "claims";

/** Index of a kind's cache: each resource's owner mark. */
export const marksIndex = "marks";

/** The claim on a platform object by its id. */
export const idClaim = (id: string): string => `id:${id}`;

/**
 * Who goes first: a resource that holds the object (its status records it) before one that only
 * names it, then the older; the UID breaks ties so every replica agrees.
 */
function claimOrder(obj: KubeObject, holds: (obj: KubeObject) => boolean): string {
  return `${holds(obj) ? 0 : 1}/${obj.metadata.creationTimestamp ?? ""}/${obj.metadata.uid ?? ""}`;
}

/** The resource, not being deleted, that goes before this one for one of `claims`; undefined: none. */
export function rivalClaim(
  obj: KubeObject,
  claims: readonly string[],
  cache: Store<KubeObject>,
  holds: (obj: KubeObject) => boolean,
): KubeObject | undefined {
  const mine = claimOrder(obj, holds);
  for (const claim of claims) {
    const rival = cache
      .byIndex(claimsIndex, claim)
      .map((key) => cache.getByKey(key))
      .find(
        (other) =>
          other !== undefined &&
          other.metadata.uid !== obj.metadata.uid &&
          !other.metadata.deletionTimestamp &&
          claimOrder(other, holds) < mine,
      );
    if (rival) return rival;
  }
  return undefined;
}

/** Every other resource, not being deleted, claiming `claim` (whatever their order). */
export function claimants(obj: KubeObject, claim: string, cache: Store<KubeObject>): KubeObject[] {
  return cache
    .byIndex(claimsIndex, claim)
    .map((key) => cache.getByKey(key))
    .filter(
      (other): other is KubeObject =>
        other !== undefined && other.metadata.uid !== obj.metadata.uid && !other.metadata.deletionTimestamp,
    );
}

/**
 * The refusal of a second claimant: Stalled, nothing sent. It names the other resource only when
 * it is in the same namespace: another team's objects are not this namespace's business.
 */
export function alreadyManaged(obj: KubeObject, rival: KubeObject | "installation", what: string): Refusal {
  const other =
    rival === "installation"
      ? "another installation of the operator (its owner mark is on it)"
      : rival.metadata.namespace === obj.metadata.namespace
        ? `${rival.kind ?? "resource"} ${objectKey(rival)}`
        : "a resource in another namespace";
  return new Refusal(
    "AlreadyManaged",
    "outside",
    `${what} is managed by ${other}; nothing is changed on the platform, and deleting this resource leaves it alone`,
  );
}

/**
 * Who the mark an object carries names, when it is not `pass.mark`: another installation of the
 * operator, or a live resource of this one (`holder`, found through the marks index). Undefined
 * when the object carries no mark of an installation (a user's label) or the mark of a resource of
 * this installation that no longer exists: then the claims of this cluster decide.
 */
export function markedOwner(
  mark: string | undefined,
  own: string,
  marks: Store<KubeObject>,
  self: KubeObject,
): { other: "installation" } | { other: "resource"; holder: KubeObject } | undefined {
  if (mark === undefined || mark === own) return undefined;
  const parsed = parseOwnerMark(mark);
  if (!parsed) return undefined;
  if (parsed.installationId !== parseOwnerMark(own)?.installationId) return { other: "installation" };
  const holder = marks
    .byIndex(marksIndex, mark)
    .map((key) => marks.getByKey(key))
    .find((o) => o !== undefined && o.metadata.uid !== self.metadata.uid);
  return holder ? { other: "resource", holder } : undefined;
}
