// A child made with its parent's create (withCarried): where the platform lets one request create
// an object together with the object of another kind that names it (a create-branch body's
// `endpoints` make the read-write endpoint of a ComputeEndpoint naming the Branch), the layer
// chooses that resource, the parent's create carries it, and the parent hands the object over by
// its status. The child kind says, on its reference to the parent (`Reference.carried`), what the
// create carries for it and how its spec reads once handed over; the rest is here, the same for
// any two kinds:
//
// - which one: the oldest resource of the namespace naming the parent (creation time, then UID:
//   the order claims are settled in, ownership.ts) that would create its object itself (managed,
//   adopting nothing, nothing recorded, the same scope and credentials), so every replica agrees;
// - its owner mark goes on the parent's platform object, in the mark `neoncloud.dev/<noun>-owner`,
//   in the same request (the child's object has no place for it yet);
// - the parent's status records that resource's name and UID (`status.<noun>`); only that very
//   resource (a new one of the same name has another UID) takes the object over as its own;
// - a crash or a lost status between the create and the status write: the parent's object is found
//   by its own mark, and the child's mark names the resource again (`recoverCarried`);
// - where the platform's create makes the child's object unasked (an anonymized branch comes with a
//   read-write endpoint whether its create names one or not), a create that carried none leaves an
//   object nobody stands for: the same choice hands it over afterwards, to the resource that would
//   have been carried, and again when that resource is gone (`handOverUnasked`). No mark can follow
//   then (the platform takes annotations only on the create): the status alone records it, and
//   after its loss the same choice is made again.
import { objectKey, type KubeObject, type ResourceKind, type Store } from "../../runtime/index.ts";
import { ownerMark, parseOwnerMark } from "./installation.ts";
import type { AnyKind, Carried } from "./kind.ts";
import type { Reference } from "./references.ts";

/** What a parent's status records of the resource its create made an object for. */
export interface MadeFor {
  name: string;
  uid: string;
}

/** A kind whose object a parent's create can make, as the parent's option sees it. */
export interface CarriedChild {
  kind: AnyKind;
  /** The child's reference to the parent kind, with what the parent's create carries. */
  reference: Reference<unknown, unknown>;
  /** Where a child resource acts (its project): it must be the parent's. */
  scope(spec: unknown, status: unknown): string | undefined;
  /** Whether the parent's create makes the child's object even when it carries none (the parent's spec). */
  unasked?: ((parentSpec: unknown) => boolean) | undefined;
}

/** Describes the child side for a parent's `withCarried`: the kind and its reference carrying it. */
export function carriedChild(
  kind: AnyKind,
  references: readonly Reference<never, never>[],
  scope: (spec: never, status: never) => string | undefined,
): CarriedChild {
  const reference = references.find((r) => r.carried !== undefined);
  if (!reference) throw new Error(`${kind.resource.kind} has no reference its parent's create carries`);
  return {
    kind,
    reference: reference,
    scope: scope,
  };
}

/** The mark on the parent's platform object that holds the child's owner mark. */
export const carriedMark = (child: { noun: string }): string => `neoncloud.dev/${child.noun}-owner`;

/** Index of a child kind's cache in the parent's controller: `namespace/name` of the parent each names. */
export const carriedIndex = (child: ResourceKind): string => `carried:${child.group}/${child.kind}`;

/** The parent a child resource names (for `carriedIndex`). */
export function parentOf(child: CarriedChild) {
  return (obj: KubeObject & { spec?: unknown }): string[] => {
    const spec = child.kind.spec.safeParse(obj.spec ?? {});
    const name = spec.success ? child.reference.name(spec.data) : undefined;
    return name === undefined ? [] : [`${obj.metadata.namespace ?? ""}/${name}`];
  };
}

/** What the parent's pass knows of itself, for choosing or recovering its child. */
export interface ParentPass {
  obj: KubeObject;
  spec: unknown;
  status: unknown;
  mark: string;
  deleting: boolean;
  cache<U extends KubeObject>(kind: ResourceKind): Store<U>;
}

/** The resources of a child kind naming the parent, oldest first, none being deleted. */
function naming(
  pass: ParentPass,
  child: CarriedChild,
): (KubeObject & { spec?: unknown; status?: unknown })[] {
  const cache: Store<KubeObject & { spec?: unknown; status?: unknown }> = pass.cache(child.kind.resource);
  const order = (o: KubeObject) => `${o.metadata.creationTimestamp ?? ""}/${o.metadata.uid ?? ""}`;
  return cache
    .byIndex(carriedIndex(child.kind.resource), objectKey(pass.obj))
    .map((key) => cache.getByKey(key))
    .filter((o) => o !== undefined && !o.metadata.deletionTimestamp)
    .map((o) => o as KubeObject & { spec?: unknown; status?: unknown })
    .sort((a, b) => order(a).localeCompare(order(b)));
}

/** A child resource's owner mark, in the installation of the parent's own mark. */
function markOf(pass: ParentPass, child: CarriedChild, obj: KubeObject): string {
  const installation = parseOwnerMark(pass.mark)?.installationId ?? "";
  return ownerMark(
    installation,
    child.kind.resource.kind,
    obj.metadata.namespace ?? "",
    obj.metadata.name ?? "",
  );
}

/** What the parent's create carries for a child, what its status then records, and words. */
export interface ToCarry {
  carried: Carried;
  status: Record<string, MadeFor>;
  message: string;
}

/** Whose object a parent's create makes, and what it carries for them. */
interface Parent {
  scope: string | undefined;
  credentials: unknown;
}

/**
 * The oldest resource of `child` naming the parent that would create its own object with the same
 * scope and credentials, with what the parent's create carries for it.
 */
function chosen(pass: ParentPass, child: CarriedChild, parent: Parent) {
  const key = JSON.stringify(parent.credentials ?? null);
  for (const obj of naming(pass, child)) {
    const parsed = child.kind.spec.safeParse(obj.spec ?? {});
    if (!parsed.success) continue;
    const spec: unknown = parsed.data;
    const status = obj.status ?? {};
    const policies = child.kind.policies(spec);
    const own =
      policies.management === "Manage" &&
      policies.adopts === undefined &&
      child.kind.recorded(status) === undefined &&
      child.scope(spec, status) === parent.scope &&
      JSON.stringify(policies.credentials ?? null) === key;
    const body: unknown = own ? child.reference.carried?.body(spec) : undefined;
    if (body === undefined) continue;
    const made: MadeFor = { name: obj.metadata.name ?? "", uid: obj.metadata.uid ?? "" };
    return { obj, body, made };
  }
  return undefined;
}

/**
 * What the create of the parent's object carries: for the first of `children` that has one, the
 * oldest resource naming the parent that would create its own object with the same scope and
 * credentials.
 */
export function toCarry(
  pass: ParentPass,
  children: readonly CarriedChild[],
  parent: Parent,
): ToCarry | undefined {
  for (const child of children) {
    const choice = chosen(pass, child, parent);
    if (!choice) continue;
    const { obj, body, made } = choice;
    return {
      carried: { marks: { [carriedMark(child.kind)]: markOf(pass, child, obj) }, body },
      status: { [child.kind.noun]: made },
      message: `with the ${child.kind.noun} of ${child.kind.resource.kind} ${made.name}`,
    };
  }
  return undefined;
}

/**
 * The object the platform made with the parent's unasked, handed to the resource that would have
 * been carried: when the status records none, or one that no longer exists.
 */
export function handOverUnasked(
  pass: ParentPass,
  children: readonly CarriedChild[],
  parent: Parent,
): Record<string, MadeFor> | undefined {
  if (pass.deleting) return undefined;
  for (const child of children) {
    if (child.unasked?.(pass.spec) !== true) continue;
    const recorded = (pass.status as Record<string, MadeFor | undefined>)[child.kind.noun];
    const present = (m: MadeFor) =>
      naming(pass, child).some((o) => o.metadata.name === m.name && o.metadata.uid === m.uid);
    if (recorded !== undefined && present(recorded)) continue;
    const choice = chosen(pass, child, parent);
    if (choice) return { [child.kind.noun]: choice.made };
  }
  return undefined;
}

/**
 * What the parent's status lost of the child its create made (a crash before the status write, a
 * restore): the resource the child's mark on its platform object names, if it still exists.
 */
export function recoverCarried(
  pass: ParentPass,
  children: readonly CarriedChild[],
  marks: Readonly<Record<string, string>> | undefined,
): Record<string, MadeFor> | undefined {
  if (marks === undefined || pass.deleting) return undefined;
  for (const child of children) {
    const mark = marks[carriedMark(child.kind)];
    const recorded = (pass.status as Record<string, MadeFor | undefined>)[child.kind.noun];
    if (mark === undefined || recorded !== undefined) continue;
    const obj = naming(pass, child).find((o) => markOf(pass, child, o) === mark);
    if (obj) return { [child.kind.noun]: { name: obj.metadata.name ?? "", uid: obj.metadata.uid ?? "" } };
  }
  return undefined;
}
