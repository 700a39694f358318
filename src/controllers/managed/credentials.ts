// Which API key a resource acts with: the Secret its spec names (in its own namespace), or the
// operator's default. A Secret is read as credentials only when it is labelled as such
// (credentialsLabel), so a resource cannot make the operator send any other Secret's value to the
// platform. What a key connects to is the operator's wiring (`connect`: src/controllers/access/
// platform-access.ts gives one platform client per key, keys of one account sharing its budget).
import type { SecretKeyRef } from "../../api/fields.ts";
import type { KubeClient, KubeObject, Store } from "../../runtime/index.ts";
import { Refusal } from "./refusal.ts";

export const secretKind = { group: "", version: "v1", plural: "secrets", kind: "Secret" } as const;

/**
 * The label that marks a Secret as platform credentials, the way Argo CD marks its credential
 * Secrets with `argocd.argoproj.io/secret-type`. Without it the operator never reads a Secret's
 * data as a key: naming a TLS key or a database password in `spec.credentials` sends nothing.
 */
export const credentialsLabel = "neoncloud.dev/secret-type";
export const credentialsLabelValue = "api-key";
/** The labels a credentials Secret carries (for the Secrets ApiKey writes, samples and tests). */
export const credentialsSecretLabels: Readonly<Record<string, string>> = {
  [credentialsLabel]: credentialsLabelValue,
};

/** Whether a Secret (its metadata is enough) is marked as platform credentials. */
export function isCredentialsSecret(secret: KubeObject): boolean {
  return secret.metadata.labels?.[credentialsLabel] === credentialsLabelValue;
}

export interface Secret extends KubeObject {
  type?: string;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

/** Where the operator's own key lives: `namespace/name`, key `apiKey` unless said otherwise. */
export interface DefaultCredentials {
  namespace: string;
  name: string;
  key: string;
}

export function parseDefaultCredentials(
  value: string | undefined,
  operatorNamespace: string,
): DefaultCredentials | undefined {
  if (!value) return undefined;
  const [first, second] = value.split("/");
  return second === undefined
    ? { namespace: operatorNamespace, name: first ?? "", key: "apiKey" }
    : { namespace: first ?? "", name: second, key: "apiKey" };
}

/**
 * The Secret is missing, not labelled as credentials, or lacks the key: one message for the three,
 * so status does not tell which Secrets or keys exist. Retried when the Secret appears or changes
 * (the controllers watch Secrets).
 */
export class CredentialsNotFoundError extends Refusal {
  constructor(message: string) {
    // Outside the spec (a Secret to make or label); its watch wakes the resource sooner.
    super("CredentialsNotFound", "outside", message);
    this.name = "CredentialsNotFoundError";
  }
}

/** Credentials found in their Secret, not yet used. */
export interface FoundCredentials<Client> {
  /** `namespace/name` of the Secret, for messages: never the key itself. */
  source: string;
  /** True when the operator's own key is used (a 401 then concerns the operator's installation). */
  isDefault: boolean;
  /** The namespace of the Secret: the resource's own, or (the operator's key) the operator's. */
  namespace: string;
  /** The Secret's resourceVersion: a refused key is retried at once when its Secret changes. */
  version: string | undefined;
  /** The key's client (its account identified on first use). */
  connect(): Promise<Client>;
}

export type SecretLookup = (namespace: string, name: string) => Secret | undefined;

export function decodeSecretValue(secret: Secret, key: string): string | undefined {
  const encoded = secret.data?.[key];
  if (encoded !== undefined) return Buffer.from(encoded, "base64").toString("utf8").trim();
  return secret.stringData?.[key]?.trim();
}

/** The one message for a Secret that is missing, unlabelled or without the key. */
function notUsable(secret: string, isDefault: boolean, key: string): string {
  const which = isDefault
    ? `Secret ${secret} (the operator's default credentials)`
    : `Secret ${secret} in this namespace`;
  return (
    `${which} is not usable as platform credentials: it must exist, carry the label ` +
    `${credentialsLabel}=${credentialsLabelValue} and hold the key "${key}"`
  );
}

/** The keys resources may act with, and what a key connects to. */
export class Access<Client> {
  private readonly defaults: DefaultCredentials | undefined;
  private readonly connect: (apiKey: string) => Promise<Client>;

  constructor(defaults: DefaultCredentials | undefined, connect: (apiKey: string) => Promise<Client>) {
    this.defaults = defaults;
    this.connect = connect;
  }

  /** The Secret a resource's credentials come from, for watch mappings. */
  secretFor(
    namespace: string,
    ref: SecretKeyRef | undefined,
  ): { namespace: string; name: string } | undefined {
    if (ref) return { namespace, name: ref.secretName };
    return this.defaults ? { namespace: this.defaults.namespace, name: this.defaults.name } : undefined;
  }

  find(namespace: string, ref: SecretKeyRef | undefined, lookup: SecretLookup): FoundCredentials<Client> {
    const target = ref
      ? { namespace, name: ref.secretName, key: ref.key }
      : this.defaults
        ? { ...this.defaults }
        : undefined;
    if (!target) {
      throw new CredentialsNotFoundError(
        "spec.credentials is not set and the operator has no default credentials (--default-credentials-secret)",
      );
    }
    const source = `${target.namespace}/${target.name}`;
    const secret = lookup(target.namespace, target.name);
    const apiKey = secret && isCredentialsSecret(secret) ? decodeSecretValue(secret, target.key) : undefined;
    if (!secret || !apiKey) {
      throw new CredentialsNotFoundError(notUsable(ref ? target.name : source, !ref, target.key));
    }
    return {
      source,
      isDefault: !ref,
      namespace: target.namespace,
      version: secret.metadata.resourceVersion,
      connect: () => this.connect(apiKey),
    };
  }

  /** Credentials the platform refused (401), until when, and in which version of their Secret. */
  private readonly rejected = new Map<string, { version: string | undefined; until: number }>();

  /**
   * The platform refused these credentials: every resource using them waits together (a 401 is a
   * property of the key, not of one resource), until `forMs` passes or the Secret changes.
   */
  reject(credentials: FoundCredentials<Client>, forMs: number): void {
    this.rejected.set(credentials.source, { version: credentials.version, until: Date.now() + forMs });
  }

  /** How long the credentials still wait after a refusal; undefined when they may be tried. */
  rejectedFor(credentials: FoundCredentials<Client>): number | undefined {
    const entry = this.rejected.get(credentials.source);
    if (!entry) return undefined;
    const left = entry.until - Date.now();
    if (entry.version !== credentials.version || left <= 0) {
      this.rejected.delete(credentials.source);
      return undefined;
    }
    return left;
  }
}

/**
 * Looks up the Secrets resources take credentials from. The controllers cache Secrets' metadata
 * only (watched as PartialObjectMetadata: a namespace's other Secrets never cross the wire), so a
 * Secret's data is read by name, only when its cached metadata carries the credentials label, and
 * kept for as long as its cached resourceVersion says it is unchanged. A resource's own Secret is
 * in a watched namespace, so the cache decides whether it exists: an unlabelled or absent one is
 * never read. The operator's default Secret may live outside the watched namespaces: it is then
 * read by name, its label checked on the answer, and kept a few seconds, as thousands of
 * resources share it.
 */
export class CredentialsLookup {
  private readonly read = new Map<string, { secret: Secret | undefined; version?: string; at: number }>();
  private readonly maxAgeMs: number;

  constructor(options: { maxAgeMs?: number } = {}) {
    this.maxAgeMs = options.maxAgeMs ?? 10_000;
  }

  async find<Client>(
    access: Access<Client>,
    namespace: string,
    ref: SecretKeyRef | undefined,
    cache: Store<Secret>,
    kube: KubeClient,
  ): Promise<FoundCredentials<Client>> {
    const target = access.secretFor(namespace, ref);
    const secret = target
      ? await this.secret(target.namespace, target.name, cache, kube, ref !== undefined)
      : undefined;
    return access.find(namespace, ref, () => secret);
  }

  /** `watched`: the Secret's namespace is one the cache holds, so a cache miss means no Secret. */
  private async secret(
    namespace: string,
    name: string,
    cache: Store<Secret>,
    kube: KubeClient,
    watched: boolean,
  ): Promise<Secret | undefined> {
    const key = `${namespace}/${name}`;
    const cached = cache.get(namespace, name);
    if (cached ? !isCredentialsSecret(cached) : watched) return undefined;
    const memo = this.read.get(key);
    if (cached) {
      const version = cached.metadata.resourceVersion;
      if (memo && version !== undefined && memo.version === version) return memo.secret;
    } else if (memo && memo.version === undefined && Date.now() - memo.at < this.maxAgeMs) {
      return memo.secret;
    }
    const secret = await kube.get<Secret>(secretKind, namespace, name);
    // Keyed by the version the cache showed when asked (a newer read is still correct for it).
    this.read.set(key, { secret, version: cached?.metadata.resourceVersion, at: Date.now() });
    return secret;
  }
}
