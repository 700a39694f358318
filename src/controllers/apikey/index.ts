// ApiKey: a platform API key in a Secret of the namespace, rotated and revoked with the resource.
// The kind is its schema (src/api/apikey.ts), its policies below, and its adapter (adapter.ts)
// with its plan (plan.ts); everything else is the managed layer's.
import { ApiKeySpec, type ApiKeyStatus } from "../../api/apikey.ts";
import { apiKeyKind } from "../../api/index.ts";
import type { Controller } from "../../runtime/index.ts";
import { managedController } from "../managed/controller.ts";
import type { ManagedKind, ManagedObject } from "../managed/types.ts";
import { resourceKind, type ControllerFactory, type KindControllerOptions } from "../options.ts";
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

function apiKeyManagedKind(tuning: ApiKeyTuning): ManagedKind<ApiKeySpec, ApiKeyStatus, KeyState, KeyStep> {
  return {
    resource: { ...apiKeyResourceKind, apiVersion: apiKeyKind.apiVersion },
    finalizer: apiKeyFinalizer,
    spec: ApiKeySpec,
    noun: "API key",
    reasonPrefix: "Key",
    // A minted key acts on the whole account: minting with the operator's key is a privilege.
    access: () => ({ mintApiKeys: true }),
    credentials: (spec) => spec.credentials,
    managementPolicy: () => "Manage",
    // Retain keeps the current key and its Secret (the adapter still revokes the others).
    deletionPolicy: (spec) => (spec.deletionPolicy === "Retain" ? "Orphan" : "Delete"),
    adopts: () => undefined,
    recorded: (status) => (status.keyId === undefined ? undefined : String(status.keyId)),
    adapter: new ApiKeys(tuning.usageRefreshMs ?? 300_000),
  };
}

/** The ApiKey controller. `create` lets a Manager own it; by default a standalone Controller (tests). */
export function apiKeyController(
  options: KindControllerOptions,
  create?: ControllerFactory<ApiKeyObject>,
  tuning: ApiKeyTuning = {},
): Controller<ApiKeyObject> {
  return managedController({ kind: apiKeyManagedKind(tuning), options, create }).controller;
}
