// The contract between the managed layer and one kind: the kind's details and four verbs. The
// anchors: Crossplane's ExternalClient (Observe / Create / Update / Delete, with an
// ExternalObservation saying whether the object exists, whether it is up to date and its connection
// details) and ACK's resource manager (ReadOne / Create / Update(delta) / Delete). Everything else a
// kind may need (references, claims, a child made in its create, waiting for the platform's work,
// grants, connection publishing) is an option composed where the kind is registered (options.ts);
// the layer owns the lifecycle between them (lifecycle.ts), and one table says what every failure
// means (refusal.ts).
import type { z } from "zod";
import type { SecretKeyRef } from "../../api/fields.ts";
import type {
  Condition,
  ConditionStatus,
  KubeClient,
  KubeObject,
  Logger,
  ResourceKind,
  Store,
} from "../../runtime/index.ts";

/** What every managed kind's status has besides its own fields: the layer writes these. */
export interface ManagedStatus {
  /** The work the last change started, waited for before the object is looked at again. */
  operations?: unknown[] | undefined;
  observedGeneration?: number | undefined;
  conditions?: Condition[] | undefined;
}

export interface ManagedObject<Status> extends KubeObject {
  spec?: unknown;
  status?: Status;
}

/** A condition's status, reason and message. */
export type Verdict = [ConditionStatus, string, string];

/** One change, as a kind's observation names it. */
export interface Step {
  /** The event's action: Update, Restart, Suspend, Restore, ... */
  readonly action: string;
  /** The condition's and the event's reason while it runs: Updating, Restarting, ... */
  readonly reason: string;
  /** What a user reads. */
  readonly message: string;
  /** The event's reason when it differs from the condition's: Created, Moving, PasswordReset. */
  readonly event?: string | undefined;
}

/** What the resource's spec says of the layer's policies. */
export interface Policies {
  /** ObserveOnly reports and never creates, changes or deletes on the platform. */
  management: "Manage" | "ObserveOnly";
  /** What happens to the platform object with the resource. */
  deletion: "Delete" | "Orphan";
  /** The Secret the resource's credentials come from; undefined: the operator's own. */
  credentials: SecretKeyRef | undefined;
  /** The id of an existing object the spec adopts (fixed once the resource manages one). */
  adopts: string | undefined;
  /** Other namespaces the resource shares its object with, and for what (its spec.sharedWith). */
  sharedWith?:
    | readonly { namespace: string; uses?: readonly ("Observe" | "Attach" | "Derive")[] | undefined }[]
    | undefined;
}

/** The connection details of an object, for the publishing option (publishing.ts) to write. */
export interface ConnectionDetails {
  /** A ConfigMap of non-secret details (hosts, ids) the resource owns. */
  configMap?: { name: string; data: Record<string, string> } | undefined;
  /**
   * A Secret the resource owns: written whole when `data` is given; only named (so a Secret
   * written earlier under another name is removed) when what it holds is current.
   */
  secret?:
    | {
        name: string;
        /** The field of the spec that names it, for messages. */
        field: string;
        data?: Record<string, string> | undefined;
        annotations?: Record<string, string> | undefined;
        /** The event's words once written. */
        note?: string | undefined;
      }
    | undefined;
}

/** What `observe` found. */
export type Observation<Obj, Status, S extends Step> =
  | { exists: false }
  | {
      exists: true;
      /** The object, for `update` and `delete`. */
      object: Obj;
      /** Its platform id. */
      id: string;
      /** Its fields in status (and what the kind records once it is as declared). */
      status: Partial<Status>;
      /** Ready while up to date: True only when the object is usable as declared. */
      ready: Verdict;
      /** The one change it needs next; undefined: it is as declared. */
      next?: S | undefined;
      /** Owner marks it carries (`ownerAnnotation`, and a child's): where the platform keeps one. */
      marks?: Record<string, string> | undefined;
      /** What to publish while it is up to date. */
      connection?: ConnectionDetails | undefined;
      /** When to look again while up to date (an expiry, a rotation); undefined: the resync. */
      lookAgainMs?: number | undefined;
    };

/** What the platform answered to a change. */
export interface Answer<Status> {
  /** The status the change leaves (the object's fields as answered, what it acted upon). */
  status?: Partial<Status> | undefined;
  /** The work the change started, waited for before the object is looked at again. */
  operations?: readonly unknown[] | undefined;
  /** Words for the event and the condition; the step's message otherwise. */
  message?: string | undefined;
}

/** One reconcile of one resource, as a kind's verbs see it. */
export interface Pass<Spec, Status, Client> {
  /** The resource as last read or written in this pass: a copy, never the cached object. */
  readonly obj: ManagedObject<Status>;
  /** The spec with its references resolved. */
  readonly spec: Spec;
  /** `obj.status`, or empty. */
  readonly status: Status;
  /** The platform, with the credentials the resource names (or the operator's own). */
  readonly client: Client;
  readonly kube: KubeClient;
  /** A read-only cache of a kind the controller watches. */
  cache<U extends KubeObject>(kind: ResourceKind): Store<U>;
  readonly events: {
    normal(reason: string, action: string, note: string): void;
    warning(reason: string, action: string, note: string): void;
  };
  /** Aborted when this replica must stop acting. Pass it to platform calls. */
  readonly signal: AbortSignal;
  readonly log: Logger;
  /** The resource is being deleted: `observe` names only what the deletion needs first. */
  readonly deleting: boolean;
  /**
   * The resource's owner mark (installation.ts): written on the objects it creates where the
   * platform keeps one, so the claim survives restarts and restores and tells installations apart;
   * also what finds an object whose create answer was lost.
   */
  readonly mark: string;
  now(): Date;
  /** Writes status fields at once: intent that must survive a crash between two platform calls. */
  save(changes: Partial<Status>): Promise<void>;
  /**
   * Reconciles the resource again now: what it waits for happened sooner than it was told (its
   * operations ended, its turn in a busy project came).
   */
  wake(): void;
}

/** The four platform verbs of a kind. A refusal is thrown as a `Refusal` (refusal.ts), never with a delay. */
export interface Adapter<Spec, Status, Obj, S extends Step, Client> {
  /** The object the resource stands for (adopted id, recorded id, or its mark), and what it needs. */
  observe(pass: Pass<Spec, Status, Client>): Promise<Observation<Obj, Status, S>>;
  /** Creates it; `carried`: fields of the create for a child made with it (carried.ts). */
  create(pass: Pass<Spec, Status, Client>, carried?: Carried): Promise<Answer<Status>>;
  /** Makes the change `observe` named. */
  update(pass: Pass<Spec, Status, Client>, step: S, observed: Obj): Promise<Answer<Status>>;
  /** Deletes it; "gone" when the platform said it was gone already. */
  delete(pass: Pass<Spec, Status, Client>, observed: Obj): Promise<Answer<Status> | "gone">;
}

/** What a create carries for a child made in the same request (carried.ts). */
export interface Carried {
  /** For the created object's annotations: the child's owner mark. */
  marks: Record<string, string>;
  /** The child kind's fields of the create (a create-branch body's `endpoints`). */
  body: unknown;
}

/** A managed kind: its details and its verbs. */
export interface Kind<Spec, Status extends ManagedStatus, Obj, S extends Step, Client> {
  resource: ResourceKind & { apiVersion: string };
  finalizer: string;
  spec: z.ZodType<Spec, unknown>;
  /** What a user calls the platform object, in messages: "endpoint", "branch", "API key". */
  noun: string;
  /** The reason prefix of its failures: `Endpoint` gives EndpointNotFound. */
  reasonPrefix: string;
  /** The spec field that adopts an existing object by id, in messages: `spec.endpointId`. */
  idField?: string | undefined;
  policies(spec: Spec): Policies;
  /**
   * Where the resource acts, as its spec resolves it (its project, its branch): written into status
   * where status has none yet, so the printer columns show it from the first attempt on, a failed
   * one included.
   */
  placement?(spec: Spec): Partial<Status>;
  /** The platform id the status recorded. */
  recorded(status: Status): string | undefined;
  adapter: Adapter<Spec, Status, Obj, S, Client>;
}

/** A kind of any spec, status and client, as options see other kinds. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyKind = Kind<any, any, any, any, any>;
