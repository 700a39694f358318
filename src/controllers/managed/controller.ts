// Builds the runtime Controller of a managed kind: the generic reconciler, its finalizer, and one
// Secret watch that wakes the resources whose credentials Secret changed (found through an index
// of the primary cache, not a scan), plus what the kind itself owns or watches.
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
import { ManagedReconciler } from "./reconciler.ts";
import type { ExternalClient, ManagedKind, ManagedObject } from "./types.ts";

/** Index of the primary cache: the `namespace/name` of the Secret each resource's credentials come from. */
const credentialsIndex = "credentials";

export interface ManagedControllerOptions<Spec, S, Diff = unknown> {
  kind: ManagedKind<Spec>;
  external: ExternalClient<Spec, S, Diff>;
  options: KindControllerOptions;
  create?: ControllerFactory<ManagedObject<S>> | undefined;
  /** Further indexes of the primary cache, for the adapter (`pass.cache(...).byIndex`). */
  indexes?: Record<string, IndexFunc<ManagedObject<S>>>;
  /** Kinds the resource owns (their changes wake their owner). */
  owns?: (ResourceKind | OwnsSpec)[];
  /** Further resources a Secret concerns besides those taking credentials from it (keys it holds). */
  secretConcerns?(secret: Secret): string[];
  /** Further kinds whose changes wake resources of this kind (a Branch its endpoints), mapped through an index. */
  watches?: WatchSpec[];
}

export function managedController<Spec, S extends object, Diff = unknown>(
  m: ManagedControllerOptions<Spec, S, Diff>,
): Controller<ManagedObject<S>> {
  const { kind, options } = m;
  const create = m.create ?? ((o) => new Controller(o, options.runtime));
  const credentialsSecret = (obj: KubeObject & { spec?: unknown }): string[] => {
    const spec = kind.spec.safeParse(obj.spec ?? {});
    if (!spec.success) return [];
    const target = options.access.secretFor(obj.metadata.namespace ?? "", kind.credentials(spec.data));
    return target ? [`${target.namespace}/${target.name}`] : [];
  };
  return create({
    kind: kind.resource,
    reconciler: new ManagedReconciler(kind, m.external, {
      access: options.access,
      now: options.now,
      unauthorizedRetryMs: options.unauthorizedRetryMs,
    }),
    finalizer: kind.finalizer,
    ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
    ...(options.resyncPeriodMs !== undefined ? { resyncPeriodMs: options.resyncPeriodMs } : {}),
    ...(options.namespaces ? { namespaces: options.namespaces } : {}),
    ...(options.informer ? { informer: options.informer } : {}),
    indexes: { ...m.indexes, [credentialsIndex]: credentialsSecret },
    ...(m.owns ? { owns: m.owns } : {}),
    watches: [
      {
        // A credentials Secret that appears or changes re-reconciles the resources using it. The
        // cache keeps Secrets' metadata only: their data is read by name when a resource needs it.
        kind: secretKind,
        metadataOnly: true,
        map: (secret: Secret, primary) => [
          ...primary.byIndex(credentialsIndex, objectKey(secret)),
          ...(m.secretConcerns?.(secret) ?? []),
        ],
      },
      ...(m.watches ?? []),
    ],
  });
}
