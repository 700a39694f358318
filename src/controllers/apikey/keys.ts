// Where an ApiKey's keys live on the platform: the account's own keys (`/api_keys`: account-wide,
// a privilege to mint), or an organization's keys scoped to one project (`/organizations/{org}/
// api_keys` with `project_id`: the key reaches that project only). The crash-safe issuing, the
// rotation and the revocation are the same for both (issue.ts, adapter.ts); only these routes differ.
import { NotFoundError, type ApiKey, type KeyListCache, type PlatformClient } from "../../platform/index.ts";

export interface KeyRoutes {
  /** The keys there: a list fetched now (`fresh`: a decision rests on it), or one shared a while. */
  list(fresh: boolean): Promise<ApiKey[]>;
  /** Creates a key of that name; its value is in this answer only. */
  create(name: string): Promise<{ id: number; key: string; createdAt?: string | undefined }>;
  /** Revokes a key; one already revoked or gone is fine. */
  revoke(id: number): Promise<void>;
}

/** Where the keys of an ApiKey live: the account's, or the organization's scoped to `scope.projectId`. */
export function keyRoutes(
  client: PlatformClient,
  accountKeys: KeyListCache,
  scope: { orgId: string; projectId: string } | undefined,
  signal: AbortSignal,
): KeyRoutes {
  const gone = (err: unknown) => {
    if (!(err instanceof NotFoundError)) throw err;
  };
  if (!scope) {
    return {
      list: (fresh) => (fresh ? accountKeys.fresh(client) : accountKeys.get(client)),
      create: (name) => client.createApiKey(name, { signal }),
      revoke: (id) => client.revokeApiKey(id, { signal }).then(() => undefined, gone),
    };
  }
  const { orgId, projectId } = scope;
  return {
    // The organization's keys, of every project: its names (with their token) tell this ApiKey's.
    list: () => client.listOrgApiKeys(orgId, { signal }),
    create: (name) => client.createOrgApiKey(orgId, name, { projectId }, { signal }),
    revoke: (id) => client.revokeOrgApiKey(orgId, id, { signal }).then(() => undefined, gone),
  };
}
