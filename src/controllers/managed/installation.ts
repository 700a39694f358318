// Who owns a platform object: the owner mark the operator writes where the platform has a place
// for one (an endpoint's name, a branch's annotations), made of this installation's id and the
// resource's kind, namespace and name. Namespace and name rather than UID, so the claim survives
// a restore of the cluster's objects; the installation id, so two installations on one account
// tell their objects apart. The id is kept in a ConfigMap of the operator's namespace, made at
// the first start (any replica; a race ends with everyone reading the winner's).
//
// Wiring: src/operator.ts reads `installationId(client, operatorNamespace, { override:
// config.installationId, log })` once before the manager starts and hands the id to the kinds,
// whose adapters name what they create `ownerMark(id, kind, namespace, name)` and read marks found
// on the platform with `parseOwnerMark`. RBAC: get and create of ConfigMaps in the operator's
// namespace.
import { createHash, randomBytes } from "node:crypto";
import {
  isConflict,
  silentLogger,
  type KubeClient,
  type KubeObject,
  type Logger,
  type ResourceKind,
} from "../../runtime/index.ts";

export const identityConfigMapName = "neon-cloud-operator-identity";
export const installationIdKey = "installationId";
/** 8 hex digits: enough to tell installations apart, short enough for an endpoint's name. */
export const installationIdPattern = /^[0-9a-f]{8}$/;

const configMapKind: ResourceKind = { group: "", version: "v1", plural: "configmaps", kind: "ConfigMap" };

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

/** The identity ConfigMap holds no usable id: changing it silently would disown every mark. */
export class InstallationIdentityError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InstallationIdentityError";
  }
}

/**
 * This installation's id: `override` (`--installation-id`) when set, else the one in the
 * ConfigMap `neon-cloud-operator-identity` of `namespace`, created with a random id when absent.
 * Two replicas starting at once may both try to create it: the loser (409) reads the winner's.
 */
export async function installationId(
  client: KubeClient,
  namespace: string,
  options: { override?: string | undefined; log?: Logger; random?: () => string } = {},
): Promise<string> {
  const log = options.log ?? silentLogger;
  if (options.override !== undefined) {
    if (!installationIdPattern.test(options.override)) {
      throw new InstallationIdentityError(
        `--installation-id must be 8 lowercase hex digits, got "${options.override}"`,
      );
    }
    return options.override;
  }
  const existing = await client.get<ConfigMap>(configMapKind, namespace, identityConfigMapName);
  if (existing) return idOf(existing, namespace);
  const id = (options.random ?? (() => randomBytes(4).toString("hex")))();
  try {
    await client.create<ConfigMap>(configMapKind, identityConfigMap(namespace, id));
    log.info(
      { installationId: id, configMap: `${namespace}/${identityConfigMapName}` },
      "installation id created",
    );
    return id;
  } catch (err) {
    if (!isConflict(err)) throw err;
    // Another replica made it first: its id is the installation's.
    const winner = await client.get<ConfigMap>(configMapKind, namespace, identityConfigMapName);
    if (!winner) throw err;
    return idOf(winner, namespace);
  }
}

function idOf(configMap: ConfigMap, namespace: string): string {
  const id = configMap.data?.[installationIdKey];
  if (id !== undefined && installationIdPattern.test(id)) return id;
  throw new InstallationIdentityError(
    `ConfigMap ${namespace}/${identityConfigMapName} holds no valid ${installationIdKey} (8 lowercase hex digits): ` +
      "restore the previous value, or set --installation-id to it; a new id would make this installation " +
      "treat the platform objects it created as another's",
  );
}

function identityConfigMap(namespace: string, id: string): ConfigMap {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: identityConfigMapName,
      namespace,
      labels: { "app.kubernetes.io/part-of": "neon-cloud-operator" },
      annotations: {
        "neoncloud.dev/description":
          "This installation's id in the owner marks of the platform objects it manages (endpoint names, " +
          "branch annotations). Keep it: a new id makes the operator take its own objects for another " +
          "installation's. Back it up with the cluster, or pass it with --installation-id.",
      },
    },
    data: { [installationIdKey]: id },
  };
}

/**
 * The owner mark of resource `kind` `namespace/name` in installation `installationId`:
 * `k8s-<installation>-<first 16 hex of sha256("kind/namespace/name")>` (29 characters).
 */
export function ownerMark(installationId: string, kind: string, namespace: string, name: string): string {
  const digest = createHash("sha256").update(`${kind}/${namespace}/${name}`).digest("hex").slice(0, 16);
  return `k8s-${installationId}-${digest}`;
}

/**
 * The annotation that holds the owner mark of the resource that created a platform object, where
 * the platform keeps annotations (a branch's): `Adapter.annotationsOf` gives the layer the mark.
 */
export const ownerAnnotation = "neoncloud.dev/owner";

/** The owner mark an object's annotations hold. */
export const annotatedMark = (obj: {
  annotations?: Record<string, string> | undefined;
}): string | undefined => obj.annotations?.[ownerAnnotation];

/** What a mark found on the platform says: an installation's resource, or nothing of ours. */
export function parseOwnerMark(value: string): { installationId: string; digest: string } | undefined {
  const match = /^k8s-([0-9a-f]{8})-([0-9a-f]{16})$/.exec(value);
  return match ? { installationId: match[1] ?? "", digest: match[2] ?? "" } : undefined;
}
