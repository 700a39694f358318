// The contract between the generic managed-resource reconciler (reconciler.ts) and one kind's
// adapter: the anchors are Crossplane's ExternalClient (Observe/Create/Update/Delete under one
// managed reconciler) and ACK's split of a generic reconciler from a per-kind resource manager.
// An adapter speaks to the platform and maps between spec, platform object and status; it never
// writes conditions, resolves credentials, handles finalizers or decides retries.
import type { z } from "zod";
import type { SecretKeyRef } from "../../api/fields.ts";
import type { PlatformClient } from "../../platform/index.ts";
import type {
  ConditionStatus,
  KubeClient,
  KubeObject,
  Logger,
  ResourceKind,
  Store,
} from "../../runtime/index.ts";

export interface ManagedObject<Status> extends KubeObject {
  spec?: unknown;
  status?: Status;
}

/** Records Events about the object of the pass (repeats are aggregated by the runtime). */
export interface PassEvents {
  normal(reason: string, action: string, note: string): void;
  warning(reason: string, action: string, note: string): void;
}

/** One reconcile of one object, as an adapter sees it. */
export interface Pass<Spec, Status> {
  /** The object as last read or written in this pass: a copy, never the cached object. */
  readonly obj: ManagedObject<Status>;
  readonly spec: Spec;
  /** `obj.status`, or empty. */
  readonly status: Status;
  /** The platform, with the credentials the resource names (or the operator's own). */
  readonly client: PlatformClient;
  /** Where the credentials came from (`namespace/name` of the Secret), for messages. */
  readonly credentialsSource: string;
  readonly kube: KubeClient;
  readonly events: PassEvents;
  readonly log: Logger;
  /** Aborted when this replica must stop acting. Pass it to platform calls. */
  readonly signal: AbortSignal;
  now(): Date;
  /** A read-only cache of a kind the controller watches. */
  cache<U extends KubeObject>(kind: ResourceKind): Store<U>;
  /**
   * Writes status fields at once (conditions untouched; an undefined value removes a field): for
   * intent that must survive a crash between two platform calls, such as a key's pending name.
   */
  save(changes: Partial<Status>): Promise<void>;
}

/** A condition's status, reason and message. */
export type Verdict = [ConditionStatus, string, string];

/** What the platform holds for the resource, and how it compares with the spec. */
export type Observation<Status, Diff = unknown> =
  | { state: "absent" }
  | {
      /** A change runs on the platform: nothing to decide until it ends. */
      state: "busy";
      status: Partial<Status>;
      reason: string;
      message: string;
      retryAfterMs: number;
    }
  | PresentObservation<Status, Diff>;

export interface PresentObservation<Status, Diff = unknown> {
  state: "present";
  /** False when the platform differs from the spec (update does the next step). */
  upToDate: boolean;
  /** What differs, as the adapter computed it for its own update. */
  diff?: Diff;
  status: Partial<Status>;
  /** Ready when up to date (True only when the platform object is usable as declared). */
  ready: Verdict;
  /** When to observe again while up to date; undefined leaves it to the resync. */
  observeAfterMs?: number;
}

/** What create or update did. */
export interface Change<Status> {
  status?: Partial<Status>;
  reason: string;
  message: string;
  /** Work now runs on the platform (kstatus' Reconciling). */
  inProgress: boolean;
  /** When to observe again. */
  requeueAfterMs: number;
}

/** What publish asks of the next pass: look again this soon (work it started is under way). */
export interface Published {
  requeueAfterMs: number;
}

/** What delete did: nothing remains, or look again later (the platform is still deleting). */
export type Deletion = { gone: true } | { gone: false; requeueAfterMs: number };

/** The platform-facing verbs of one kind. */
export interface ExternalClient<Spec, Status, Diff = unknown> {
  observe(pass: Pass<Spec, Status>): Promise<Observation<Status, Diff>>;
  create(pass: Pass<Spec, Status>): Promise<Change<Status>>;
  update(pass: Pass<Spec, Status>, observed: PresentObservation<Status, Diff>): Promise<Change<Status>>;
  delete(pass: Pass<Spec, Status>): Promise<Deletion>;
  /** After an observation while up to date: publish what the resource owns (a ConfigMap). */
  publish?(pass: Pass<Spec, Status>): Promise<Published | undefined | void>;
}

/** A managed kind: its schema and policies, and the adapter that speaks to the platform. */
export interface ManagedKind<Spec> {
  resource: ResourceKind & { apiVersion: string };
  finalizer: string;
  spec: z.ZodType<Spec, unknown>;
  /** The Secret the resource's platform credentials come from; undefined: the operator's own. */
  credentials(spec: Spec): SecretKeyRef | undefined;
  /** Report only: never create, change or delete on the platform. */
  observeOnly(spec: Spec): boolean;
  /** Leave the platform object when the resource is deleted. */
  orphanOnDelete(spec: Spec): boolean;
}
