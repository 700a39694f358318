// May a namespace act with the operator's default credentials, and for what? CredentialsGrants
// (cluster-scoped, written by cluster administrators) name or select namespaces and say which
// projects they may touch and whether they may create projects or mint API keys; several grants
// add up, no grant grants nothing. Only the default credentials need a grant: a resource whose
// spec.credentials names a Secret of its own namespace acts with that key on its own account.
//
// A kind takes it as an option (`withGrants`): its caches then hold the grants and the namespaces'
// metadata, a change wakes the resources it may concern (Stalled ones included), and before a
// resource sends anything with the default credentials its admission checks what it asks.
import { CredentialsGrantSpec, credentialsGrantKind, type LabelSelector } from "../../api/grant.ts";
import type { PlatformClient } from "../../platform/index.ts";
import {
  objectKey,
  type KubeObject,
  type ResourceKind,
  type Store,
  type WatchSpec,
} from "../../runtime/index.ts";
import type { Admission, AdmissionRequest, Option } from "../managed/features.ts";
import { ownerMark } from "../managed/installation.ts";
import { outside } from "../managed/refusal.ts";

export const credentialsGrantResource: ResourceKind = {
  group: credentialsGrantKind.group,
  version: credentialsGrantKind.version,
  plural: credentialsGrantKind.plural,
  kind: credentialsGrantKind.kind,
  namespaced: false,
};

export const namespaceResource: ResourceKind = {
  group: "",
  version: "v1",
  plural: "namespaces",
  kind: "Namespace",
  namespaced: false,
};

/** What a resource asks to do with the operator's default credentials. */
export interface GrantRequest {
  /** The project it acts on (an existing one: adopted, or where it creates its object). */
  projectId?: string;
  /** It creates a new project. */
  createProject?: boolean;
  /** It mints an API key. */
  mintApiKeys?: boolean;
  /** It mints a key that reaches its one project only (`projectId`). */
  mintProjectApiKeys?: boolean;
}

export interface NotGranted {
  reason: "NotGranted";
  /** What is missing and who can grant it; nothing about other namespaces or their grants. */
  message: string;
}

/** The namespace asked about: its name and, when known, its labels (for namespaceSelector). */
export interface NamespaceFacts {
  name: string;
  labels: Readonly<Record<string, string>> | undefined;
}

/** Whether `labels` satisfy `selector` (metav1.LabelSelector: every requirement holds; `{}` selects all). */
export function selects(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (labels[key] !== value) return false;
  }
  for (const e of selector.matchExpressions ?? []) {
    const present = Object.hasOwn(labels, e.key);
    const value = labels[e.key];
    const inValues = present && value !== undefined && (e.values ?? []).includes(value);
    const holds =
      e.operator === "In"
        ? inValues
        : e.operator === "NotIn"
          ? !inValues
          : e.operator === "Exists"
            ? present
            : !present;
    if (!holds) return false;
  }
  return true;
}

/** Whether a grant covers the namespace: by name, or by its selector when the labels are known. */
function covers(grant: CredentialsGrantSpec, namespace: NamespaceFacts): boolean {
  if (grant.namespaces?.includes(namespace.name)) return true;
  return (
    grant.namespaceSelector !== undefined &&
    namespace.labels !== undefined &&
    selects(grant.namespaceSelector, namespace.labels)
  );
}

/**
 * The decision, from the grants and the namespace alone: undefined when every part of `want` is
 * granted by some grant covering the namespace (grants add up), else what is missing.
 */
export function decideGrant(
  grants: readonly CredentialsGrantSpec[],
  namespace: NamespaceFacts,
  want: GrantRequest,
): NotGranted | undefined {
  const mine = grants.filter((g) => covers(g, namespace));
  const projects = new Set(mine.flatMap((g) => g.projects));
  const missing: string[] = [];
  if (want.projectId !== undefined && !projects.has("*") && !projects.has(want.projectId)) {
    missing.push(`for project ${want.projectId}`);
  }
  if (want.createProject && !mine.some((g) => g.createProjects)) missing.push("for creating projects");
  if (want.mintApiKeys && !mine.some((g) => g.mintApiKeys)) missing.push("for minting API keys");
  // A key of one granted project is less than an account-wide one: either privilege allows it.
  if (want.mintProjectApiKeys && !mine.some((g) => g.mintProjectApiKeys || g.mintApiKeys)) {
    missing.push("for minting keys of that project");
  }
  // Asking for nothing in particular still needs some grant for the namespace.
  if (missing.length === 0 && (mine.length > 0 || hasAsked(want))) return undefined;
  const what = missing.length > 0 ? ` ${missing.join(" and ")}` : "";
  return {
    reason: "NotGranted",
    message:
      `the operator's default credentials are not granted to namespace ${namespace.name}${what}: ` +
      "a cluster administrator can grant them with a CredentialsGrant (docs/security.md), " +
      "or set spec.credentials to a Secret of this namespace",
  };
}

function hasAsked(want: GrantRequest): boolean {
  return (
    want.projectId !== undefined ||
    want.createProject === true ||
    want.mintApiKeys === true ||
    want.mintProjectApiKeys === true
  );
}

type GrantObject = KubeObject & { spec?: unknown };

/** The grants and namespaces as cached, read as the decision needs them. */
export class Grants {
  private readonly grants: Store<GrantObject>;
  private readonly namespaces: Store<KubeObject>;
  /** Parsed specs by cached object (cached objects are replaced, never changed, on update). */
  private readonly parsed = new WeakMap<object, CredentialsGrantSpec | null>();

  constructor(grants: Store<GrantObject>, namespaces: Store<KubeObject>) {
    this.grants = grants;
    this.namespaces = namespaces;
  }

  /** May `namespace` do `want` with the operator's default credentials? */
  check(namespace: string, want: GrantRequest): NotGranted | undefined {
    // A namespace not (yet) in the cache has unknown labels: only grants naming it count.
    const cached = this.namespaces.get(undefined, namespace);
    const labels = cached ? (cached.metadata.labels ?? {}) : undefined;
    return decideGrant(this.specs(), { name: namespace, labels }, want);
  }

  /** Every valid grant; one the schema refuses (stored under an older one) grants nothing. */
  private specs(): CredentialsGrantSpec[] {
    const out: CredentialsGrantSpec[] = [];
    for (const obj of this.grants.list()) {
      let spec = this.parsed.get(obj);
      if (spec === undefined) {
        const result = CredentialsGrantSpec.safeParse(obj.spec ?? {});
        spec = result.success ? result.data : null;
        this.parsed.set(obj, spec);
      }
      if (spec) out.push(spec);
    }
    return out;
  }
}

/** The Grants of a pass, from its controller's caches (which `grantWatches` adds). */
export function grantsOf(cache: <U extends KubeObject>(kind: ResourceKind) => Store<U>): Grants {
  return new Grants(cache<GrantObject>(credentialsGrantResource), cache(namespaceResource));
}

/**
 * The watches a managed controller adds so grants work and take effect at once: CredentialsGrants,
 * and the namespaces' metadata (their labels, for namespaceSelector; watched as metadata only).
 * A change re-reconciles the resources of the namespaces it may concern.
 */
export function grantWatches<T extends KubeObject>(): WatchSpec<T>[] {
  const keysIn = (primary: Store<T>, namespace: string): string[] =>
    primary.list(namespace).map((o) => objectKey(o));
  return [
    {
      kind: credentialsGrantResource,
      map: (grant: GrantObject, primary) => {
        const spec = CredentialsGrantSpec.safeParse(grant.spec ?? {});
        // A selector may cover any namespace; so may a grant that cannot be read.
        if (!spec.success || spec.data.namespaceSelector !== undefined) {
          return primary.list().map((o) => objectKey(o));
        }
        return (spec.data.namespaces ?? []).flatMap((ns) => keysIn(primary, ns));
      },
    },
    {
      kind: namespaceResource,
      metadataOnly: true,
      map: (namespace: KubeObject, primary) => keysIn(primary, namespace.metadata.name ?? ""),
    },
  ];
}

/**
 * A kind whose resources make projects (Project): a project one of them created is usable by the
 * other resources of its namespace on the operator's default credentials, as a CredentialsGrant's
 * `createProjects` promises, once the platform confirms that resource made it.
 */
export interface ProjectMaker {
  kind: ResourceKind;
  /** The project the resource created (not one it adopted), as its status records it. */
  created(obj: KubeObject): string | undefined;
  /**
   * Whether the platform shows `projectId` made by the resource whose owner mark is `mark`: a
   * status can be written by whoever may write it, the mark on the platform only by the operator.
   */
  confirm(client: PlatformClient, projectId: string, mark: string, signal: AbortSignal): Promise<boolean>;
}

/** Index of the primary cache: `namespace/project id` of the project each resource acts in. */
const projectIndex = "grants:project";

/**
 * The option: the operator's default credentials act only where a CredentialsGrant allows what
 * `access` asks. A key in a Secret of the resource's own namespace (spec.credentials, or the
 * operator's own key in a namespaced install) needs no grant: its account is the namespace's own
 * business. `enabled: false` (an installation that may not read grants) lets the operator's key
 * serve only its own namespace. A project a resource of the namespace created (`madeBy`: a
 * Project, with createProjects) is the namespace's own.
 */
export function withGrants<Spec, Status>(
  access: (spec: Spec) => GrantRequest,
  options: { enabled: boolean; madeBy?: readonly ProjectMaker[] },
): Option<Spec, Status, PlatformClient> {
  const madeBy = options.madeBy ?? [];
  const admission: Admission<Spec, PlatformClient> = {
    async admit(request) {
      const { obj, spec, credentials } = request;
      const namespace = obj.metadata.namespace ?? "";
      if (!credentials.isDefault || credentials.namespace === namespace) return;
      if (!options.enabled) {
        throw outside(
          "NotGranted",
          `this installation of the operator may not read CredentialsGrants (a namespaced install), so its own key serves only namespace ${credentials.namespace}: set spec.credentials to a Secret of this namespace`,
        );
      }
      const want = access(spec);
      const denied = grantsOf((kind) => request.cache(kind)).check(namespace, want);
      if (denied && !(await madeInNamespace(request, madeBy, namespace, want))) {
        throw outside(denied.reason, denied.message);
      }
    },
    indexes: {
      [projectIndex]: (obj: KubeObject & { spec?: unknown }) => {
        const projectId = (obj.spec as { projectId?: unknown } | undefined)?.projectId;
        return typeof projectId === "string" ? [`${obj.metadata.namespace ?? ""}/${projectId}`] : [];
      },
    },
    watches: [
      ...(options.enabled ? grantWatches() : []),
      // A resource that makes a project (a Project) wakes the resources of its namespace acting in
      // that project: its project may be usable by them now.
      ...madeBy.map((maker): WatchSpec => ({
        kind: maker.kind,
        map: (made, primary) => {
          const id = maker.created(made);
          return id === undefined
            ? []
            : primary.byIndex(projectIndex, `${made.metadata.namespace ?? ""}/${id}`);
        },
      })),
    ],
  };
  return (features) => (features.admission = admission);
}

/** Whether the one project `want` names was created by a resource of the namespace, as the platform confirms. */
async function madeInNamespace<Spec>(
  request: AdmissionRequest<Spec, PlatformClient>,
  madeBy: readonly ProjectMaker[],
  namespace: string,
  want: GrantRequest,
): Promise<boolean> {
  const projectId = want.projectId;
  if (projectId === undefined || want.createProject || want.mintApiKeys || want.mintProjectApiKeys)
    return false;
  for (const maker of madeBy) {
    for (const made of request.cache(maker.kind).list(namespace)) {
      if (made.metadata.deletionTimestamp || maker.created(made) !== projectId) continue;
      const mark = ownerMark(request.installationId, maker.kind.kind, namespace, made.metadata.name ?? "");
      if (await maker.confirm(request.credentials.client, projectId, mark, request.signal)) return true;
    }
  }
  return false;
}
