// What every kind's controller factory takes: the runtime's dependencies,
// platform access, and the tuning the operator's configuration decides.
import type {
  Controller,
  ControllerDeps,
  ControllerOptions,
  InformerOptions,
  KubeObject,
  ResourceKind,
} from "../runtime/index.ts";
import type { PlatformAccess } from "./credentials.ts";

export interface KindControllerOptions {
  runtime: ControllerDeps;
  access: PlatformAccess;
  namespaces?: string[] | undefined;
  concurrency?: number | undefined;
  /** Periodic re-observation of every object (drift), jittered. */
  resyncPeriodMs?: number | undefined;
  /** While platform operations run, look again this often (the platform recommends about 5 s). */
  pollIntervalMs?: number | undefined;
  /** How long resources wait after the platform refused their credentials (default 5 min: no hot loop). */
  unauthorizedRetryMs?: number | undefined;
  /** The clock, for schedules such as key rotation. */
  now?: (() => Date) | undefined;
  /**
   * This installation's id (managed/installation.ts), part of the owner mark every resource writes
   * on the platform objects it creates. Default: `00000000`, for tests that need no other.
   */
  installationId?: string | undefined;
  /**
   * Watch CredentialsGrants and namespaces (cluster-scoped: default true). False where the
   * operator may not read them (a namespaced install): the operator's key then serves only the
   * namespace its Secret is in.
   */
  grants?: boolean | undefined;
  /** Informer tuning (tests freeze cached objects so a mutation fails loudly). */
  informer?: Omit<InformerOptions, "namespaces" | "labelSelector" | "log"> | undefined;
}

/** Makes the Controller for a kind's options: a Manager's, or a standalone one in tests. */
export type ControllerFactory<T extends KubeObject> = (options: ControllerOptions<T>) => Controller<T>;

/** The runtime's handle of a kind defined in src/api. */
export function resourceKind(def: ResourceKind): ResourceKind {
  return { group: def.group, version: def.version, plural: def.plural, kind: def.kind };
}
