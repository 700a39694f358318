// What every kind's controller factory takes: the runtime's dependencies,
// platform access, and the tuning the operator's configuration decides.
import type { PlatformClient } from "../platform/index.ts";
import type { Controller, ControllerOptions, KubeObject, ResourceKind } from "../runtime/index.ts";
import type { PlatformAccess } from "./access/platform-access.ts";
import type { ManagedControllerOptions } from "./managed/controller.ts";

export interface KindControllerOptions extends Omit<ManagedControllerOptions<PlatformClient>, "classify"> {
  access: PlatformAccess;
  /**
   * Watch CredentialsGrants and namespaces (cluster-scoped: default true). False where the
   * operator may not read them (a namespaced install): the operator's key then serves only the
   * namespace its Secret is in.
   */
  grants?: boolean | undefined;
}

/** Makes the Controller for a kind's options: a Manager's, or a standalone one in tests. */
export type ControllerFactory<T extends KubeObject> = (options: ControllerOptions<T>) => Controller<T>;

/** The runtime's handle of a kind defined in src/api. */
export function resourceKind(def: ResourceKind): ResourceKind {
  return { group: def.group, version: def.version, plural: def.plural, kind: def.kind };
}
