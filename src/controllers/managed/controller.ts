// Builds the runtime Controller of a managed kind: the one reconciler, its finalizer, and the
// watches its options need, each mapped back to the resources it concerns through an index of the
// primary cache, never a scan: the Secrets resources take credentials from or own, the kinds their
// references name (a Branch that becomes Ready wakes the resources naming it), the resources they
// follow by platform id, the kinds whose object their create carries (caches only), and whatever
// the admission option watches (CredentialsGrants, namespaces).
import {
  Controller,
  objectKey,
  type ControllerDeps,
  type ControllerOptions,
  type IndexFunc,
  type InformerOptions,
  type KubeObject,
  type ResourceKind,
  type WatchSpec,
} from "../../runtime/index.ts";
import { carriedIndex, parentOf } from "./carried.ts";
import { configMapKind } from "./connection-configmap.ts";
import { secretKind, type Access, type Secret } from "./credentials.ts";
import type { Managed } from "./features.ts";
import { ownerMark } from "./installation.ts";
import type { ManagedObject, ManagedStatus, Step } from "./kind.ts";
import { claimsIndex, idClaim, marksIndex } from "./ownership.ts";
import { secretOwner } from "./owned-secret.ts";
import { ManagedReconciler } from "./reconciler.ts";
import { managesIndex } from "./references.ts";
import type { Refusal } from "./refusal.ts";
import { holdsIndex, type Holder } from "./uses.ts";

/** Index of the primary cache: the `namespace/name` of the Secret each resource's credentials come from. */
const credentialsIndex = "credentials";

/** Index of the primary cache: `namespace/name` of each resource a reference names, per referenced kind. */
const referenceIndex = (kind: ResourceKind): string => `reference:${kind.group}/${kind.kind}`;

/** Index of the primary cache: `namespace/id` each resource follows, per followed kind. */
const followIndex = (kind: ResourceKind): string => `follows:${kind.group}/${kind.kind}`;

/** What every managed controller takes from the operator's wiring. */
export interface ManagedControllerOptions<Client> {
  runtime: ControllerDeps;
  access: Access<Client>;
  /** Reads errors of the outside world (the platform's answers) as refusals. */
  classify: (err: unknown) => Refusal | undefined;
  namespaces?: string[] | undefined;
  concurrency?: number | undefined;
  /** Periodic re-observation of every object (drift), jittered. */
  resyncPeriodMs?: number | undefined;
  /** While the platform's work runs, look again this often (the platform recommends about 5 s). */
  pollIntervalMs?: number | undefined;
  /** How long resources wait after the platform refused their credentials (default 5 min: no hot loop). */
  unauthorizedRetryMs?: number | undefined;
  /** The clock, for schedules such as key rotation. */
  now?: (() => Date) | undefined;
  /**
   * This installation's id (installation.ts), part of the owner mark every resource writes on the
   * platform objects it creates. Default: `00000000`, for tests that need no other.
   */
  installationId?: string | undefined;
  /** Informer tuning (tests freeze cached objects so a mutation fails loudly). */
  informer?: Omit<InformerOptions, "namespaces" | "labelSelector" | "log"> | undefined;
}

const key = (ns: string | undefined, name: string) => `${ns ?? ""}/${name}`;

export function managedController<Spec, S extends ManagedStatus, Obj, St extends Step, Client>(
  m: Managed<Spec, S, Obj, St, Client>,
  options: ManagedControllerOptions<Client>,
  create: (o: ControllerOptions<ManagedObject<S>>) => Controller<ManagedObject<S>> = (o) =>
    new Controller(o, options.runtime),
): Controller<ManagedObject<S>> {
  const { kind, features } = m;
  type Obj_ = KubeObject & { spec?: unknown; status?: unknown };
  const parse = (obj: Obj_) => kind.spec.safeParse(obj.spec ?? {});
  const statusOf = (obj: Obj_) => (obj.status ?? {}) as S;
  const reconciler = new ManagedReconciler(m, options);

  const indexes: Record<string, IndexFunc<ManagedObject<S>>> = {
    [credentialsIndex]: (obj) => {
      const spec = parse(obj);
      if (!spec.success) return [];
      const target = options.access.secretFor(
        obj.metadata.namespace ?? "",
        kind.policies(spec.data).credentials,
      );
      return target ? [key(target.namespace, target.name)] : [];
    },
    // What each resource claims (ownership.ts). An observe-only resource changes nothing: it claims nothing.
    [claimsIndex]: (obj) => {
      const spec = parse(obj);
      if (!spec.success) return [];
      const policies = kind.policies(spec.data);
      if (policies.management === "ObserveOnly") return [];
      const id = policies.adopts ?? kind.recorded(statusOf(obj));
      return [
        ...(id === undefined ? [] : [idClaim(id)]),
        ...(features.claims?.of(spec.data, statusOf(obj)) ?? []),
      ];
    },
    [marksIndex]: (obj) => [
      ownerMark(
        reconciler.installationId,
        kind.resource.kind,
        obj.metadata.namespace ?? "",
        obj.metadata.name ?? "",
      ),
    ],
    ...(features.admission?.indexes ?? {}),
  };
  const watches: WatchSpec[] = [
    {
      // A credentials Secret that appears or changes re-reconciles the resources using it; a
      // Secret the resource owns (its connection Secret), changed or deleted, wakes it to write
      // it again. The cache keeps Secrets' metadata only: their data is read by name when needed.
      kind: secretKind,
      metadataOnly: true,
      map: (secret: Secret, primary) => [
        ...primary.byIndex(credentialsIndex, objectKey(secret)),
        ...secretOwner(kind.resource)(secret),
      ],
    },
    ...(features.admission?.watches ?? []),
  ];

  for (const refKind of uniqueKinds(features.references.map((r) => r.kind))) {
    const index = referenceIndex(refKind);
    indexes[index] = (obj) => {
      const spec = parse(obj);
      if (!spec.success) return [];
      return features.references
        .filter((r) => sameKind(r.kind, refKind))
        .map((r) => r.name(spec.data))
        .filter((name): name is string => name !== undefined)
        .map((name) => key(obj.metadata.namespace, name));
    };
    watches.push({ kind: refKind, map: (target, primary) => primary.byIndex(index, objectKey(target)) });
  }
  // A followed resource's changes wake the resources acting on the platform id it manages.
  for (const follow of features.follows) {
    const index = followIndex(follow.kind);
    indexes[index] = (obj) => {
      const spec = parse(obj);
      const id = spec.success ? follow.id(spec.data, statusOf(obj)) : undefined;
      return id === undefined ? [] : [key(obj.metadata.namespace, id)];
    };
    watches.push({
      kind: follow.kind,
      map: (target, primary) => {
        const id = follow.manages(target);
        return id === undefined ? [] : primary.byIndex(index, key(target.metadata.namespace, id));
      },
    });
  }
  // Resources holding what this kind uses: a change (consent given or withdrawn) wakes the
  // resources using it (uses.ts).
  const holders = uniqueHolders(features.uses.flatMap((u) => u.holders));
  for (const holder of holders) {
    const index = usesIndex(holder.kind);
    indexes[index] = (obj) => {
      const spec = parse(obj);
      if (!spec.success) return [];
      return features.uses
        .filter((u) => u.holders.some((h) => sameKind(h.kind, holder.kind)))
        .map((u) => u.id(spec.data, statusOf(obj)))
        .filter((id): id is string => id !== undefined);
    };
    watches.push({
      kind: holder.kind,
      map: (target, primary) => holder.holds(target).flatMap((id) => primary.byIndex(index, id)),
    });
  }
  // A resource's consent (its sharedWith) wakes the observe-only resources of other namespaces
  // that name its object.
  indexes[observesIndex] = (obj) => {
    const spec = parse(obj);
    if (!spec.success) return [];
    const policies = kind.policies(spec.data);
    return policies.management === "ObserveOnly" && policies.adopts !== undefined ? [policies.adopts] : [];
  };
  watches.push({
    kind: kind.resource,
    map: (target, primary) => {
      const id = kind.recorded(statusOf(target));
      return id === undefined
        ? []
        : primary.byIndex(observesIndex, id).filter((key) => key !== objectKey(target));
    },
  });
  // Kinds a create carries are watched for their cache (the create reads it, carried.ts), and wake
  // a parent whose object came with theirs unasked: it is handed over to one of them.
  for (const child of features.carries) {
    const names = parentOf(child);
    watches.push({
      kind: child.kind.resource,
      map: (target, primary) =>
        child.unasked === undefined
          ? []
          : names(target).filter((key) => {
              const parent = primary.getByKey(key);
              const spec = parent ? parse(parent) : undefined;
              return spec?.success === true && child.unasked?.(spec.data) === true;
            }),
    });
  }

  const controller = create({
    kind: kind.resource,
    reconciler,
    finalizer: kind.finalizer,
    ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
    ...(options.resyncPeriodMs !== undefined ? { resyncPeriodMs: options.resyncPeriodMs } : {}),
    ...(options.namespaces ? { namespaces: options.namespaces } : {}),
    ...(options.informer ? { informer: options.informer } : {}),
    indexes,
    // A ConfigMap of connection details, changed or deleted, wakes its resource to write it again.
    ...(features.publishing ? { owns: [configMapKind] } : {}),
    watches: merged(watches),
  });
  for (const child of features.carries) {
    controller.addIndex(child.kind.resource, carriedIndex(child.kind.resource), parentOf(child));
  }
  // The holder's own function: every kind using what it holds shares one index of its cache.
  for (const holder of holders) controller.addIndex(holder.kind, holdsIndex(holder.kind), holder.holds);
  for (const follow of features.follows) {
    controller.addIndex(follow.kind, managesIndex(follow.kind), (o: KubeObject) => {
      const id = follow.manages(o);
      return id === undefined ? [] : [key(o.metadata.namespace, id)];
    });
  }
  return controller;
}

/** Index of the primary cache: the platform ids each resource uses of a holder kind. */
const usesIndex = (kind: ResourceKind): string => `uses:${kind.group}/${kind.kind}`;

/** Index of the primary cache: the id an observe-only resource names. */
const observesIndex = "observes";

const sameKind = (a: ResourceKind, b: ResourceKind) => a.group === b.group && a.kind === b.kind;

function uniqueHolders(holders: Holder[]): Holder[] {
  return [...new Map(holders.map((h) => [`${h.kind.group}/${h.kind.kind}`, h])).values()];
}

function uniqueKinds(kinds: ResourceKind[]): ResourceKind[] {
  return [...new Map(kinds.map((k) => [`${k.group}/${k.kind}`, k])).values()];
}

/** One watch per kind: the runtime keeps one cache per kind, so mappings of one kind are joined. */
function merged(watches: WatchSpec[]): WatchSpec[] {
  const byKind = new Map<string, WatchSpec>();
  for (const w of watches) {
    const id = `${w.kind.group}/${w.kind.plural}`;
    const before = byKind.get(id);
    byKind.set(
      id,
      before
        ? { ...before, map: (obj, primary) => [...before.map(obj, primary), ...w.map(obj, primary)] }
        : w,
    );
  }
  return [...byKind.values()];
}
