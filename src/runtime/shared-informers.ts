// One informer per kind (and per shape of watch) for every controller of a manager, as client-go's
// SharedInformerFactory and controller-runtime's cache give. Several controllers watch the same
// kinds: Projects are the Project controller's own and are watched by every kind that names one,
// Secrets (metadata only) by every kind. With an informer per controller each of them was listed,
// watched and cached once per controller: at 1,000 tenants at rest four copies of every Project
// (about 2.4 KB each) and five of every Secret's metadata (about 0.9 KB each), two thirds of a
// tenant's heap (docs/scale.md). Shared, a kind is cached once; cached objects are never mutated
// by their readers (informer.ts), so one copy serves them all.
//
// Each controller still registers its own handlers, and its own indexes under its own names
// (controller.ts), so controllers that share a cache never see each other's indexes.
import { Informer, type InformerOptions } from "./informer.ts";
import type { KubeClient, ResourceKind } from "./kube.ts";
import type { Logger } from "./log.ts";
import type { CacheTransform } from "./transform.ts";

export class SharedInformers {
  private readonly client: KubeClient;
  /** The log of shared informers (the manager's): not that of the controller that asked first. */
  private readonly log: Logger | undefined;
  /** The informer to share for each shape of watch. */
  private readonly byShape = new Map<string, Informer>();
  /** Every informer made here (one not shared any more included), to stop them all. */
  private readonly made: Informer[] = [];
  /** Transforms by identity: informers share only when they keep the same of each object. */
  private readonly transforms = new Map<CacheTransform, number>();

  constructor(client: KubeClient, log?: Logger) {
    this.client = client;
    this.log = log;
  }

  /**
   * The informer of `kind` for these options: the one already made for the same namespaces, label
   * selector, transform and tuning, or a new one. An informer already started is not shared (a
   * handler or index added now would miss its first list): a new one is made.
   */
  informer(kind: ResourceKind, options: InformerOptions): Informer {
    const key = this.shapeOf(kind, options);
    const known = this.byShape.get(key);
    if (known && !known.started) return known;
    const informer = new Informer(this.client, kind, this.log ? { ...options, log: this.log } : options);
    this.byShape.set(key, informer);
    this.made.push(informer);
    return informer;
  }

  /** Every informer made, once each (shared ones are listed once). */
  get all(): readonly Informer[] {
    return this.made;
  }

  /** Stops every informer made here. */
  async stop(): Promise<void> {
    await Promise.all(this.all.map((i) => i.stop()));
  }

  /** What makes two informers of one kind the same watch and the same cache. */
  private shapeOf(kind: ResourceKind, options: InformerOptions): string {
    const { transform, log: _log, namespaces, ...tuning } = options;
    let transformId = 0;
    if (transform) {
      transformId = this.transforms.get(transform) ?? this.transforms.size + 1;
      this.transforms.set(transform, transformId);
    }
    return JSON.stringify([
      kind.group,
      kind.version,
      kind.plural,
      [...new Set(namespaces ?? [])].sort(),
      transformId,
      canonical(tuning),
    ]);
  }
}

/** A value with its objects' keys in order, so options written in any order compare equal. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value !== "object" || value === null) return value;
  const entries = Object.entries(value).filter(([, v]) => v !== undefined);
  return entries.sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k, canonical(v)]);
}
