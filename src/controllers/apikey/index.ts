// ApiKey: a platform API key in a Secret of the namespace, rotated and revoked with the resource.
// The kind is its schema (src/api/apikey.ts), its details and options below, and its four verbs
// (adapter.ts) with its plan (plan.ts); everything else is the managed layer's.
import { ApiKeySpec, type ApiKeyStatus } from "../../api/apikey.ts";
import { apiKeyKind } from "../../api/index.ts";
import type { PlatformClient } from "../../platform/index.ts";
import { withGrants } from "../access/grants.ts";
import { managed, type Managed } from "../managed/features.ts";
import type { ManagedObject } from "../managed/kind.ts";
import { resourceKind, type KindControllerOptions } from "../options.ts";
import { ApiKeys, type KeyState } from "./adapter.ts";
import type { KeyStep } from "./plan.ts";

export type ApiKeyObject = ManagedObject<ApiKeyStatus>;

export const apiKeyResourceKind = resourceKind(apiKeyKind);

export const apiKeyFinalizer = "neoncloud.dev/apikey";

/** Tuning beyond KindControllerOptions, for tests. */
export interface ApiKeyTuning {
  /** How old the shared key list (usage figures) may get (default 5 min). */
  usageRefreshMs?: number;
}

/** The ApiKey kind with its options. */
export function apiKey(
  options: KindControllerOptions,
  tuning: ApiKeyTuning = {},
): Managed<ApiKeySpec, ApiKeyStatus, KeyState, KeyStep, PlatformClient> {
  return managed(
    {
      resource: { ...apiKeyResourceKind, apiVersion: apiKeyKind.apiVersion },
      finalizer: apiKeyFinalizer,
      spec: ApiKeySpec,
      noun: "API key",
      reasonPrefix: "Key",
      policies: (spec) => ({
        management: "Manage",
        // Retain keeps the current key and its Secret: the adapter's delete, which still revokes the others.
        deletion: "Delete",
        credentials: spec.credentials,
        adopts: undefined,
      }),
      placement: (spec) => ({ projectId: spec.projectId }),
      recorded: (status) => (status.keyId === undefined ? undefined : String(status.keyId)),
      adapter: new ApiKeys(tuning.usageRefreshMs ?? 300_000),
    },
    // A minted key acts on the whole account: minting with the operator's key is a privilege. A
    // key of one project reaches that project only: a grant of it may allow that alone.
    withGrants<ApiKeySpec, ApiKeyStatus>(
      (spec) =>
        spec.projectId === undefined
          ? { mintApiKeys: true }
          : { projectId: spec.projectId, mintProjectApiKeys: true },
      { enabled: options.grants !== false },
    ),
  );
}
