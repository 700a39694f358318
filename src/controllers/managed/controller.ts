// Builds the runtime Controller of a managed kind: the generic reconciler, its finalizer, the
// Secret watch (credentials Secrets and the Secrets it owns wake their resources, found through
// an index of the primary cache, not a scan), a watch of every kind its references name (a Branch
// that becomes Ready wakes the resources naming it), and what the kind itself owns or watches.
import {
  Controller,
  objectKey,
  type IndexFunc,
  type KubeObject,
  type OwnsSpec,
  type ResourceKind,
  type WatchSpec,
} from "../../runtime/index.ts";
import { secretKind, type Secret } from "../credentials.ts";
import type { ControllerFactory, KindControllerOptions } from "../options.ts";
import { childIndex, parentsOf } from "./children.ts";
import { grantWatches } from "./grants.ts";
import { ownerMark } from "./installation.ts";
import { claimsIndex, idClaim, marksIndex } from "./ownership.ts";
import { secretOwner } from "./owned-secret.ts";
import { ManagedReconciler } from "./reconciler.ts";
import type { ManagedKind, ManagedObject, ManagedStatus, Step } from "./types.ts";

/** Index of the primary cache: the `namespace/name` of the Secret each resource's credentials come from. */
const credentialsIndex = "credentials";

/** Index of the primary cache: `namespace/project id` of the project each resource acts in. */
const projectIndex = "project";

/** Index of the primary cache: `namespace/name` of each resource a reference names, per referenced kind. */
const referenceIndex = (kind: ResourceKind): string => `reference:${kind.group}/${kind.kind}`;

/** Index of the primary cache: `namespace/id` each resource recorded for a reference that wakes by id. */
const recordedIndex = (kind: ResourceKind): string => `recorded:${kind.group}/${kind.kind}`;

export interface ManagedControllerOptions<Spec, S extends ManagedStatus, Obj, St extends Step> {
  kind: ManagedKind<Spec, S, Obj, St>;
  options: KindControllerOptions;
  create?: ControllerFactory<ManagedObject<S>> | undefined;
  /** Further indexes of the primary cache, for the adapter (`pass.cache(...).byIndex`). */
  indexes?: Record<string, IndexFunc<ManagedObject<S>>>;
  /** Kinds the resource owns besides its Secrets (their changes wake it): a connection ConfigMap. */
  owns?: (ResourceKind | OwnsSpec)[];
  /** Further resources a Secret concerns besides those taking credentials from it or owning it. */
  secretConcerns?(secret: Secret): string[];
  /** Further kinds whose changes wake resources of this kind, mapped through an index. */
  watches?: WatchSpec[];
}

export function managedController<Spec, S extends ManagedStatus, Obj, St extends Step>(
  m: ManagedControllerOptions<Spec, S, Obj, St>,
): { controller: Controller<ManagedObject<S>>; reconciler: ManagedReconciler<Spec, S, Obj, St> } {
  const { kind, options } = m;
  const create = m.create ?? ((o) => new Controller(o, options.runtime));
  const parse = (obj: KubeObject & { spec?: unknown }) => kind.spec.safeParse(obj.spec ?? {});
  const credentialsSecret = (obj: KubeObject & { spec?: unknown }): string[] => {
    const spec = parse(obj);
    if (!spec.success) return [];
    const target = options.access.secretFor(obj.metadata.namespace ?? "", kind.credentials(spec.data));
    return target ? [`${target.namespace}/${target.name}`] : [];
  };
  const referenced = [...new Map((kind.references ?? []).map((r) => [referenceIndex(r.kind), r.kind]))];
  const referenceIndexes = Object.fromEntries(
    referenced.map(([index]) => [
      index,
      (obj: KubeObject & { spec?: unknown }): string[] => {
        const spec = parse(obj);
        if (!spec.success) return [];
        return (kind.references ?? [])
          .filter((r) => referenceIndex(r.kind) === index)
          .map((r) => r.name(spec.data))
          .filter((name): name is string => name !== undefined)
          .map((name) => `${obj.metadata.namespace ?? ""}/${name}`);
      },
    ]),
  ) as Record<string, IndexFunc<ManagedObject<S>>>;
  const referenceWatches: WatchSpec[] = referenced.map(([index, refKind]) => ({
    kind: refKind,
    map: (target, primary) => primary.byIndex(index, objectKey(target)),
  }));
  // A reference that wakes by id: the referenced resource's changes wake the resources whose status
  // recorded its platform id too, whether they name it or not (endpoints on a branch by id, whose
  // Secrets a Branch reset concerns).
  const byId = (kind.references ?? []).filter((r) => r.wakeById === true && r.recorded !== undefined);
  const recordedIndexes = Object.fromEntries(
    byId.map((r) => [
      recordedIndex(r.kind),
      (obj: KubeObject & { status?: unknown }): string[] => {
        const id = r.recorded?.((obj.status ?? {}) as S);
        return id === undefined ? [] : [`${obj.metadata.namespace ?? ""}/${id}`];
      },
    ]),
  ) as Record<string, IndexFunc<ManagedObject<S>>>;
  const recordedWatches: WatchSpec[] = byId.map((r) => ({
    kind: r.kind,
    map: (target, primary) => {
      const id = r.id(target);
      const key = `${target.metadata.namespace ?? ""}/${id ?? ""}`;
      return id === undefined ? [] : primary.byIndex(recordedIndex(r.kind), key);
    },
  }));
  // A resource that makes a project (a Project) wakes the resources of its namespace acting in
  // that project: its project may be usable by them now (the grant check, reconciler.ts).
  const makerWatches: WatchSpec[] = (kind.projectMakers ?? []).map((maker) => ({
    kind: maker.kind,
    map: (made, primary) => {
      const id = maker.created(made);
      return id === undefined ? [] : primary.byIndex(projectIndex, `${made.metadata.namespace ?? ""}/${id}`);
    },
  }));
  // Child kinds are watched for their cache only: the create reads it (children.ts); a change of
  // theirs wakes nothing.
  const children = kind.children?.() ?? [];
  const childWatches: WatchSpec[] = children.map((child) => ({ kind: child.resource, map: () => [] }));
  const projectOf = (obj: KubeObject & { spec?: unknown; status?: unknown }): string[] => {
    const spec = parse(obj);
    const id = spec.success ? kind.projectOf?.(spec.data, (obj.status ?? {}) as S) : undefined;
    return id === undefined ? [] : [`${obj.metadata.namespace ?? ""}/${id}`];
  };
  const owned = secretOwner(kind.resource);
  // What each resource claims (ownership.ts). An observe-only resource changes nothing: it claims nothing.
  const claims = (obj: KubeObject & { spec?: unknown; status?: unknown }): string[] => {
    const spec = parse(obj);
    if (!spec.success || kind.managementPolicy(spec.data) === "ObserveOnly") return [];
    const status = (obj.status ?? {}) as S;
    const id = kind.adopts(spec.data) ?? kind.recorded(status);
    return [...(id === undefined ? [] : [idClaim(id)]), ...(kind.claims?.(spec.data, status) ?? [])];
  };
  const reconciler = new ManagedReconciler(kind, {
    access: options.access,
    now: options.now,
    unauthorizedRetryMs: options.unauthorizedRetryMs,
    pollIntervalMs: options.pollIntervalMs,
    installationId: options.installationId,
    grants: options.grants,
  });
  const controller = create({
    kind: kind.resource,
    reconciler,
    finalizer: kind.finalizer,
    ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
    ...(options.resyncPeriodMs !== undefined ? { resyncPeriodMs: options.resyncPeriodMs } : {}),
    ...(options.namespaces ? { namespaces: options.namespaces } : {}),
    ...(options.informer ? { informer: options.informer } : {}),
    indexes: {
      ...m.indexes,
      ...referenceIndexes,
      ...recordedIndexes,
      [credentialsIndex]: credentialsSecret,
      ...(makerWatches.length > 0 ? { [projectIndex]: projectOf } : {}),
      [claimsIndex]: claims,
      [marksIndex]: (obj) => [
        ownerMark(
          reconciler.installationId,
          kind.resource.kind,
          obj.metadata.namespace ?? "",
          obj.metadata.name ?? "",
        ),
      ],
    },
    ...(m.owns ? { owns: m.owns } : {}),
    watches: [
      {
        // A credentials Secret that appears or changes re-reconciles the resources using it; a
        // Secret the resource owns (its connection Secret), changed or deleted, wakes it to write
        // it again. The cache keeps Secrets' metadata only: their data is read by name when needed.
        kind: secretKind,
        metadataOnly: true,
        map: (secret: Secret, primary) => [
          ...primary.byIndex(credentialsIndex, objectKey(secret)),
          ...owned(secret),
          ...(m.secretConcerns?.(secret) ?? []),
        ],
      },
      // A CredentialsGrant or a namespace's labels that change may allow or refuse resources.
      ...(options.grants === false ? [] : grantWatches<ManagedObject<S>>()),
      ...merged([
        ...referenceWatches,
        ...recordedWatches,
        ...makerWatches,
        ...childWatches,
        ...(m.watches ?? []),
      ]),
    ],
  });
  // Each child kind's cache, indexed by the resource of this kind each of its resources names.
  for (const child of children) {
    const cache = controller.caches.find(
      (i) => i.kind.group === child.resource.group && i.kind.plural === child.resource.plural,
    );
    cache?.addIndex(childIndex(child.resource), parentsOf(child, kind.resource));
  }
  return { controller, reconciler };
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
