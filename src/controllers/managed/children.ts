// A child made with its parent's create (docs/controllers.md): where the platform lets one request
// create an object together with the object of another kind that names it (the create-branch
// body's `endpoints`: a Branch's create makes the read-write endpoint of a ComputeEndpoint naming
// it by `branchRef`), the layer chooses that resource, the parent's create carries it, and the
// parent hands the object over by its status. The child kind says, on its reference to the parent
// (`Reference.along`), what the create carries for it; the rest is here, the same for any kinds:
//
// - which one: the oldest resource of the namespace naming the parent (creation time, then UID:
//   the order claims are settled in, ownership.ts) that would create its object itself (managed,
//   adopting nothing, nothing recorded, same project and credentials), so every replica agrees;
// - its owner mark goes on the parent's platform object, in the annotation
//   `neoncloud.dev/<noun>-owner`, in the same request (the child's object has no place for it yet);
// - the parent's status records that resource's name and UID (`status.<noun>`); only that very
//   resource (a new one of the same name has another UID) takes the object over, as one it created;
// - a crash or a lost status between the create and the status write: the parent's object is found
//   by its own mark, and the annotation names the resource again (`recoverChild`).
import { objectKey, type KubeObject, type ResourceKind, type Store } from "../../runtime/index.ts";
import { ownerMark, parseOwnerMark } from "./installation.ts";
import type {
  AnyManagedKind,
  ChildCreate,
  ManagedKind,
  ManagedStatus,
  Pass,
  Reference,
  Step,
} from "./types.ts";

/** What a parent's status records of the resource its create made an object for. */
export interface MadeFor {
  name: string;
  uid: string;
}

/** The annotation of the parent's platform object that holds the child's owner mark. */
export const childOwnerAnnotation = (child: Pick<AnyManagedKind, "noun">): string =>
  `neoncloud.dev/${child.noun}-owner`;

/** Index of a child kind's cache in the parent's controller: `namespace/name` of the parent each names. */
export const childIndex = (child: ResourceKind): string => `children:${child.group}/${child.kind}`;

const sameKind = (a: ResourceKind, b: ResourceKind) => a.group === b.group && a.kind === b.kind;

/** The child kind's reference to the parent kind whose create carries it. */
function along(child: AnyManagedKind, parent: ResourceKind): Reference<unknown, unknown> | undefined {
  return child.references?.find((r) => r.along !== undefined && sameKind(r.kind, parent));
}

/** The parent a child resource names (for `childIndex`). */
export function parentsOf(child: AnyManagedKind, parent: ResourceKind) {
  const ref = along(child, parent);
  return (obj: KubeObject & { spec?: unknown }): string[] => {
    const spec = child.spec.safeParse(obj.spec ?? {});
    const name = spec.success ? ref?.name(spec.data) : undefined;
    return name === undefined ? [] : [`${obj.metadata.namespace ?? ""}/${name}`];
  };
}

/** The resources of a child kind naming the resource of the pass, oldest first, none being deleted. */
function naming(pass: Pass<unknown, unknown>, child: AnyManagedKind): (KubeObject & { spec?: unknown })[] {
  const cache: Store<KubeObject & { spec?: unknown; status?: unknown }> = pass.cache(child.resource);
  const order = (o: KubeObject) => `${o.metadata.creationTimestamp ?? ""}/${o.metadata.uid ?? ""}`;
  return cache
    .byIndex(childIndex(child.resource), objectKey(pass.obj))
    .map((key) => cache.getByKey(key))
    .filter((o) => o !== undefined && !o.metadata.deletionTimestamp)
    .map((o) => o as KubeObject & { spec?: unknown; status?: unknown })
    .sort((a, b) => order(a).localeCompare(order(b)));
}

/** A child resource's owner mark, in the installation of the pass's own mark. */
function markOf(pass: Pass<unknown, unknown>, child: AnyManagedKind, obj: KubeObject): string {
  const installation = parseOwnerMark(pass.mark)?.installationId ?? "";
  return ownerMark(installation, child.resource.kind, obj.metadata.namespace ?? "", obj.metadata.name ?? "");
}

/** What the create of the pass's object carries for a child, what its status then records, and words. */
export interface ChildToCreate<Status> {
  create: ChildCreate;
  status: Partial<Status>;
  message: string;
}

/**
 * What the create of the pass's object carries for a child: the oldest resource naming it that
 * would create its own object with the same project and credentials, if the child kind takes one.
 */
export function childToCreate<Spec, Status extends ManagedStatus, Obj, S extends Step>(
  parent: ManagedKind<Spec, Status, Obj, S>,
  pass: Pass<Spec, Status>,
): ChildToCreate<Status> | undefined {
  const project = parent.projectOf?.(pass.spec, pass.status);
  const key = JSON.stringify(parent.credentials(pass.spec) ?? null);
  for (const child of parent.children?.() ?? []) {
    const ref = along(child, parent.resource);
    for (const obj of naming(pass, child)) {
      const parsed = child.spec.safeParse(obj.spec ?? {});
      if (!parsed.success) continue;
      const spec: unknown = parsed.data;
      const status = ((obj as { status?: unknown }).status ?? {}) as ManagedStatus;
      const own =
        child.managementPolicy(spec) === "Manage" &&
        child.adopts(spec) === undefined &&
        child.recorded(status) === undefined &&
        child.projectOf?.(spec, status) === project &&
        JSON.stringify(child.credentials(spec) ?? null) === key;
      const body: unknown = own ? ref?.along?.(spec) : undefined;
      if (body === undefined || body === false) continue;
      const mark = markOf(pass, child, obj);
      const made: MadeFor = { name: obj.metadata.name ?? "", uid: obj.metadata.uid ?? "" };
      return {
        create: { annotations: { [childOwnerAnnotation(child)]: mark }, body },
        status: { [child.noun]: made } as Partial<Status>,
        message: `with the ${child.noun} of ${child.resource.kind} ${made.name}`,
      };
    }
  }
  return undefined;
}

/**
 * What the parent's status lost of the child its create made (a crash before the status write, a
 * restore): the resource the annotation on its platform object names by owner mark, if it still exists.
 */
export function recoverChild<Spec, Status extends ManagedStatus, Obj, S extends Step>(
  parent: ManagedKind<Spec, Status, Obj, S>,
  pass: Pass<Spec, Status>,
  observed: Obj,
): Partial<Status> | undefined {
  const annotations = parent.adapter.annotationsOf?.(observed);
  if (annotations === undefined || pass.deleting) return undefined;
  for (const child of parent.children?.() ?? []) {
    const mark = annotations[childOwnerAnnotation(child)];
    const recorded = (pass.status as unknown as Record<string, MadeFor | undefined>)[child.noun];
    if (mark === undefined || recorded !== undefined) continue;
    const obj = naming(pass, child).find((o) => markOf(pass, child, o) === mark);
    if (obj)
      return {
        [child.noun]: { name: obj.metadata.name ?? "", uid: obj.metadata.uid ?? "" },
      } as Partial<Status>;
  }
  return undefined;
}

/**
 * Whether a parent this resource names recorded that its create made this resource's object
 * (`status.<noun>` with this resource's name and UID): the object is then this resource's own.
 */
export function handedOver<Spec, Status extends ManagedStatus, Obj, S extends Step>(
  kind: ManagedKind<Spec, Status, Obj, S>,
  spec: Spec,
  obj: KubeObject,
  cache: (kind: ResourceKind) => Store<KubeObject>,
): boolean {
  return (kind.references ?? []).some((ref) => {
    const name = ref.along ? ref.name(spec) : undefined;
    if (name === undefined) return false;
    const parent = cache(ref.kind).get(obj.metadata.namespace, name) as { status?: Record<string, unknown> };
    const made = parent?.status?.[kind.noun] as MadeFor | undefined;
    return made !== undefined && made.name === obj.metadata.name && made.uid === obj.metadata.uid;
  });
}
