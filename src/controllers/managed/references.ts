// Links between kinds are data the layer reads, never imports between kinds (withReferences,
// withFollows). Before anything looks at the platform, each field naming another resource of the
// namespace (a Branch, a Project) is read from the cache and its platform id put into the spec the
// kind's verbs see; until that resource is Ready the resource waits, with one reason for every kind
// (WaitingForReference), and is woken when it changes (controller.ts maps the referenced kind's
// changes back through an index). A follow is softer: the resource of another kind managing the
// platform id this one acts on (whatever its name) lends it a fact (a branch's last reset), and
// its changes wake this one; nothing waits for it.
import type { KubeObject, ResourceKind, Store } from "../../runtime/index.ts";

/** A field naming another resource of the namespace whose platform id this one needs. */
export interface Reference<Spec, Status> {
  /** The field, as messages name it: `spec.branchRef`. */
  field: string;
  kind: ResourceKind;
  /** The referenced resource's name in this namespace, when the spec uses the reference. */
  name(spec: Spec): string | undefined;
  /** Its platform id once it is usable. */
  id(target: KubeObject): string | undefined;
  /** The spec with the id filled in. */
  fill(spec: Spec, id: string): Spec;
  /** Needed only to create the platform object (a parent): an existing object goes on without it. */
  createOnly?: boolean;
  /** Where a resource being deleted finds the id when the referenced resource is gone. */
  recorded?(status: Status): string | undefined;
  /**
   * The referenced resource's create can make this resource's object in the same request (its
   * kind registered `withCarried`, carried.ts): what the create carries for it (undefined: it makes
   * its own), and the spec as the verbs see it once that create made its object for it.
   */
  carried?: { body(spec: Spec): unknown; handedOver(spec: Spec): Spec };
}

/** The resource of another kind managing the platform id this one acts on, followed without waiting. */
export interface Follow<Spec, Status> {
  kind: ResourceKind;
  /** The platform id this resource acts on whose managing resource it follows. */
  id(spec: Spec, status: Status): string | undefined;
  /** The platform id a resource of `kind` manages. */
  manages(target: KubeObject): string | undefined;
  /** The spec with what it takes from that resource (undefined: none manages the id). */
  fill(spec: Spec, target: KubeObject | undefined): Spec;
}

export type Resolution<Spec> =
  | { state: "resolved"; spec: Spec }
  /** A reference another resource must satisfy first: why, in words naming it. */
  | { state: "waiting"; spec: Spec; message: string; createOnly: boolean };

/** Why a referenced resource cannot be used yet; undefined when it can. */
export function notReady(target: KubeObject | undefined, key: string): string | undefined {
  if (!target) return `${key} does not exist yet`;
  if (target.metadata.deletionTimestamp) return `${key} is being deleted`;
  const conditions = (
    target as {
      status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
    }
  ).status?.conditions;
  const ready = conditions?.find((c) => c.type === "Ready");
  if (ready?.status !== "True") {
    const why = ready ? `${ready.reason}: ${ready.message}` : "not reconciled yet";
    return `${key} is not Ready (${why})`;
  }
  return undefined;
}

/**
 * The spec with every reference it uses filled in. A reference that cannot be resolved says why
 * (the first one that holds up an existing object before one needed only for a create).
 * `recorded` fills a reference of a resource being deleted from its status: a referenced
 * resource that went first must not hold up the deletion.
 */
export function resolveReferences<Spec, Status>(
  spec: Spec,
  obj: KubeObject,
  noun: string,
  references: readonly Reference<Spec, Status>[],
  cache: (kind: ResourceKind) => Store<KubeObject>,
  recorded?: Status,
): Resolution<Spec> {
  const namespace = obj.metadata.namespace;
  let resolved = spec;
  let blocking: string | undefined;
  let forCreate: string | undefined;
  for (const ref of references) {
    const name = ref.name(spec);
    if (name === undefined) continue;
    const target = cache(ref.kind).get(namespace, name);
    if (ref.carried && handedOver(target, noun, obj)) {
      resolved = ref.carried.handedOver(resolved);
    }
    const key = `${ref.kind.kind} ${namespace ?? ""}/${name}`;
    const why = notReady(target, key);
    const id = why === undefined && target ? ref.id(target) : undefined;
    const use = id ?? (recorded === undefined ? undefined : ref.recorded?.(recorded));
    if (use !== undefined) {
      resolved = ref.fill(resolved, use);
      continue;
    }
    const message = `${ref.field}: ${why ?? `${key} has no platform id yet`}`;
    if (ref.createOnly) forCreate ??= message;
    else blocking ??= message;
  }
  const message = blocking ?? forCreate;
  if (message === undefined) return { state: "resolved", spec: resolved };
  return { state: "waiting", spec: resolved, message, createOnly: blocking === undefined };
}

/** Index of a followed kind's cache: `namespace/id` of the platform id each resource manages. */
export const managesIndex = (kind: ResourceKind): string => `manages:${kind.group}/${kind.kind}`;

/** The spec with what every follow lends it. */
export function applyFollows<Spec, Status>(
  spec: Spec,
  status: Status,
  namespace: string | undefined,
  follows: readonly Follow<Spec, Status>[],
  cache: (kind: ResourceKind) => Store<KubeObject>,
): Spec {
  let filled = spec;
  for (const follow of follows) {
    const id = follow.id(spec, status);
    const store = cache(follow.kind);
    const target =
      id === undefined
        ? undefined
        : store
            .byIndex(managesIndex(follow.kind), `${namespace ?? ""}/${id}`)
            .map((key) => store.getByKey(key))
            .find((o) => o !== undefined && !o.metadata.deletionTimestamp);
    filled = follow.fill(filled, target);
  }
  return filled;
}

/**
 * Whether the parent a child resource names recorded that its create made this resource's object
 * (`status.<noun>` with this resource's name and UID, carried.ts): the object is then its own.
 */
export function handedOver(parent: KubeObject | undefined, noun: string, obj: KubeObject): boolean {
  const made = (
    parent as { status?: Record<string, { name?: string; uid?: string } | undefined> } | undefined
  )?.status?.[noun];
  return made !== undefined && made.name === obj.metadata.name && made.uid === obj.metadata.uid;
}
