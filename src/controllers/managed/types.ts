// The contract between the managed layer and one kind. The anchors: ACK's resource manager
// (ReadOne / Create / Update(desired, latest, delta) / Delete under one generic reconciler),
// Crossplane's ExternalClient, kube-rs's `Action`. A kind is its schema, its policies and an
// adapter of platform verbs plus a pure plan; the layer owns everything between them: references,
// credentials, waiting for the platform's operations, not-found and gone, one change per pass, an
// event per change, the management and deletion policies, connection details, status and
// conditions, and what each error means.
import type { z } from "zod";
import type { SecretKeyRef } from "../../api/fields.ts";
import type { StatusOperation } from "../../api/operations.ts";
import type { MutationOptions, Operation, PlatformClient } from "../../platform/index.ts";
import type {
  Condition,
  ConditionStatus,
  KubeClient,
  KubeObject,
  Logger,
  ResourceKind,
  Store,
} from "../../runtime/index.ts";
import type { PostgresConnection } from "./connection-secret.ts";
import type { Problem } from "./errors.ts";
import type { GrantRequest } from "./grants.ts";

/** What every managed kind's status has besides its own fields: the layer writes these. */
export interface ManagedStatus {
  /** The operations of the last change, waited for before the object is looked at again. */
  operations?: StatusOperation[] | undefined;
  observedGeneration?: number | undefined;
  conditions?: Condition[] | undefined;
  /** The connection Secret last written (never its password). */
  connectionSecret?: ConnectionSecretStatus | undefined;
}

export interface ConnectionSecretStatus {
  name?: string | undefined;
  role?: string | undefined;
  database?: string | undefined;
  /** The rotatePasswordAt annotation value last acted upon. */
  passwordRotatedAt?: string | undefined;
  /** Why a reset was sent whose new password is not in the Secret yet. */
  passwordReset?: string | undefined;
  /** Where the Secret says to connect (never the password): what the ConfigMap states too. */
  address?: ConnectionAddress | undefined;
}

export interface ConnectionAddress {
  host: string;
  port: number;
  pooledHost: string;
  pooledPort: number;
  sslmode: string;
}

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
  /** The spec with its references resolved (a branchRef read as the Branch's id). */
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
  /** The resource is being deleted. */
  readonly deleting: boolean;
  /**
   * A resource it names recorded that its create made this resource's platform object (a Branch's
   * status.endpoint, managed/children.ts): that object is this resource's own, as if it created it.
   */
  readonly handedOver: boolean;
  /**
   * The resource's owner mark (managed/installation.ts): written on the platform objects it
   * creates where the platform has a place for it, so the claim survives restarts and restores and
   * tells installations apart; also the name that finds an object whose create answer was lost.
   */
  readonly mark: string;
  now(): Date;
  /** A read-only cache of a kind the controller watches. */
  cache<U extends KubeObject>(kind: ResourceKind): Store<U>;
  /**
   * Writes status fields at once (conditions untouched; an undefined value removes a field): for
   * intent that must survive a crash between two platform calls, such as a key's pending name.
   */
  save(changes: Partial<Status>): Promise<void>;
  /** A mutation's options: the pass's signal, and the resource as its ticket in the project's gate. */
  mutation(): MutationOptions;
  /** Reconciles the resource again now (what it waits on on the platform has happened). */
  wake(): void;
}

/** A condition's status, reason and message. */
export type Verdict = [ConditionStatus, string, string];

/** What the platform answered to a change. */
export interface Answer<Obj, Status> {
  /** The platform object as the answer shows it; undefined when the answer has none. */
  object?: Obj | undefined;
  /** The operations the change started: the layer waits for them before looking again. */
  operations: readonly Operation[];
  /** What the change settled in status besides the object's own fields (an annotation acted upon). */
  status?: Partial<Status>;
  /** Words for the event and the condition; the step's message (or the layer's) otherwise. */
  message?: string;
}

/** One change on the platform, as a kind's plan names it. */
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

/** What a kind publishes while its platform object is up to date. */
export interface ConnectionDetails {
  /**
   * Non-secret details (hosts, ids) in a ConfigMap the resource owns; with a connection Secret,
   * `data` gets the address that Secret was written with, so both say the same.
   */
  configMap?: { name: string; data: (address?: ConnectionAddress) => Record<string, string> } | undefined;
  /** A Postgres role's connection Secret: the layer reads the password, or resets it as a change. */
  secret?: PostgresConnection | undefined;
}

/**
 * A field naming another resource of the namespace whose platform id this one needs (a Branch's
 * branch, a Project's project). Resolved before anything else; until the other resource is Ready
 * the resource waits (WaitingForReference), woken when it changes.
 */
export interface Reference<Spec, Status> {
  /** The field, as messages name it: `spec.branchRef`. */
  field: string;
  kind: ResourceKind;
  /** The referenced resource's name in this namespace, when the spec uses the reference. */
  name(spec: Spec): string | undefined;
  /** Its platform id once it is usable. */
  id(target: KubeObject): string | undefined;
  /** The spec with the id filled in. */
  fill(spec: Spec, id: string): Spec;
  /** Needed only to create the platform object (a parent): an existing object goes on without it. */
  createOnly?: boolean;
  /** Where a resource being deleted finds the id when the referenced resource is gone. */
  recorded?(status: Status): string | undefined;
  /**
   * The referenced resource's changes wake also the resources whose status recorded its id
   * (`recorded`), naming it or not (managed/controller.ts).
   */
  wakeById?: boolean;
  /**
   * What the referenced resource's create carries to make this resource's object in the same
   * request, as fields of its create (undefined or false: it makes its own), where its kind lists this one in `children`
   * (managed/children.ts): a Branch's create makes a ComputeEndpoint's read-write endpoint.
   */
  along?(spec: Spec): unknown;
}

/** What a create carries for a child made in the same request (managed/children.ts). */
export interface ChildCreate {
  /** For the created object's annotations: the child's owner mark. */
  annotations: Record<string, string>;
  /** Fields of the create for the child (`Reference.along`): the create-branch body's `endpoints`. */
  body: unknown;
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

/** The platform-facing verbs of one kind, and its plan. */
export interface Adapter<Spec, Status, Obj, S extends Step> {
  /** The platform object the resource stands for: by adopted id, recorded id, or its mark. */
  find(pass: Pass<Spec, Status>): Promise<Obj | undefined>;
  /** The object's platform id. */
  id(observed: Obj): string;
  /** The owner mark the object carries, where the platform keeps one (an endpoint's name). */
  markOf?(observed: Obj): string | undefined;
  /**
   * The object's annotations, where the platform keeps them: the owner mark (`ownerAnnotation`,
   * installation.ts) when the adapter has no `markOf`, and a child's (children.ts).
   */
  annotationsOf?(observed: Obj): Record<string, string> | undefined;
  /**
   * The one change the object needs next, or undefined when it is as declared. Pure: decided
   * from the pass's spec, status, annotations and clock and the observed object. While the
   * resource is being deleted (`pass.deleting`), only what the deletion needs (unprotect).
   */
  plan(pass: Pass<Spec, Status>, observed: Obj): S | undefined;
  /** Creates it; with `child`, the object of a child resource too, in the same request. */
  create(pass: Pass<Spec, Status>, child?: ChildCreate): Promise<Answer<Obj, Status>>;
  apply(pass: Pass<Spec, Status>, step: S, observed: Obj): Promise<Answer<Obj, Status>>;
  /** Deletes it; "gone" when the platform said it was gone already (a 204, a 404). */
  delete(pass: Pass<Spec, Status>, observed: Obj): Promise<Answer<Obj, Status> | "gone">;
  /** The object's fields in status. */
  status(observed: Obj, pass: Pass<Spec, Status>): Partial<Status>;
  /** What status records once the object is as declared (a desired run state now applied). */
  settled?(pass: Pass<Spec, Status>): Partial<Status>;
  /** Ready when up to date: True only when the object is usable as declared. */
  ready(observed: Obj): Verdict;
  /** The recorded object is gone: what to report instead of creating it again (undefined: create). */
  vanished?(pass: Pass<Spec, Status>): Problem<Status> | undefined;
  /** A platform refusal in the resource's own words (a Problem), or the error as it is. */
  explain?(err: unknown, pass: Pass<Spec, Status>, step: S | "create" | "delete"): unknown;
  /** The refusal of a claim another resource holds, in the kind's words (default: AlreadyManaged). */
  claimRefused?(pass: Pass<Spec, Status>, claim: string, rival: KubeObject): Problem | undefined;
  /** When to look again while up to date (a branch's expiry); undefined: the resync. */
  observeAfterMs?(pass: Pass<Spec, Status>, observed: Obj): number | undefined;
  /** Connection details to publish while up to date. */
  connection?(pass: Pass<Spec, Status>, observed: Obj): ConnectionDetails | undefined;
  /** What the Orphan deletion policy still does (an ApiKey's Retain revokes the other keys). */
  orphan?(pass: Pass<Spec, Status>): Promise<void>;
  /** After the object is gone: forget what was held for the resource. */
  forget?(uid: string): void;
}

/** A managed kind: its schema, its policies, its references, and its adapter. */
export interface ManagedKind<Spec, Status extends ManagedStatus, Obj, S extends Step> {
  resource: ResourceKind & { apiVersion: string };
  finalizer: string;
  spec: z.ZodType<Spec, unknown>;
  /** What a user calls the platform object, in messages: "endpoint", "branch", "API key". */
  noun: string;
  /** The reason prefix of its failures: `Endpoint` gives EndpointNotFound. */
  reasonPrefix: string;
  /** The Secret the resource's platform credentials come from; undefined: the operator's own. */
  credentials(spec: Spec): SecretKeyRef | undefined;
  /** ObserveOnly reports and never creates, changes or deletes on the platform. */
  managementPolicy(spec: Spec): "Manage" | "ObserveOnly";
  /** What happens to the platform object with the resource. */
  deletionPolicy(spec: Spec): "Delete" | "Orphan";
  /** The platform id the spec names to adopt. */
  adopts(spec: Spec): string | undefined;
  /** The platform id the status recorded. */
  recorded(status: Status): string | undefined;
  /**
   * What the resource holds in this cluster besides its platform object, refused to a second
   * claimant before a create (a branch's one read-write endpoint).
   */
  claims?(spec: Spec, status: Status): string[];
  /**
   * The project the resource acts in, once references are resolved (waiting for its operations,
   * messages): from the spec, or the status where the resource made the project itself.
   */
  projectOf?(spec: Spec, status: Status): string | undefined;
  /** What the resource asks of the operator's default credentials (CredentialsGrant). */
  access(spec: Spec): GrantRequest;
  references?: readonly Reference<Spec, Status>[];
  /** Kinds whose resources make the projects this one may act in (a Project's project). */
  projectMakers?: readonly ProjectMaker[];
  /**
   * Kinds whose object this one's create can make in the same request, for a resource naming this
   * one (their reference with `along`): a Branch's ComputeEndpoints. A function: kinds import each other.
   */
  children?(): readonly AnyManagedKind[];
  adapter: Adapter<Spec, Status, Obj, S>;
}

/** A managed kind of any spec and status, as the layer sees another kind (`children`). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyManagedKind = ManagedKind<any, any, any, any>;
