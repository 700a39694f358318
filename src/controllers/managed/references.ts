// The one reference step, before anything looks at the platform: each field naming another
// resource of the namespace (a Branch, a Project) is read from the cache and its platform id put
// into the spec the adapter sees. Until the other resource is Ready, the resource waits, with one
// reason for every kind (WaitingForReference), and is woken when that resource changes (the
// controller maps the referenced kind's changes back through an index, controller.ts).
import type { KubeObject, Store } from "../../runtime/index.ts";
import type { Reference } from "./types.ts";

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
  references: readonly Reference<Spec, Status>[],
  namespace: string | undefined,
  cache: (ref: Reference<Spec, Status>) => Store<KubeObject>,
  recorded?: Status,
): Resolution<Spec> {
  let resolved = spec;
  let blocking: string | undefined;
  let forCreate: string | undefined;
  for (const ref of references) {
    const name = ref.name(spec);
    if (name === undefined) continue;
    const target = cache(ref).get(namespace, name);
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
