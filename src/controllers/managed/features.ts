// The layer's options: what a kind may need besides its four verbs, composed where the kind is
// registered (Crossplane's `NewReconciler(..., WithReferenceResolver(...), WithInitializers(...),
// WithConnectionPublishers(...))`). Each option fills one field here; the layer reads the field at
// its step of the lifecycle (lifecycle.ts, reconciler.ts, controller.ts). An option that knows the
// platform (waiting for its operations, CredentialsGrants) is written outside this folder and
// plugs in through the interfaces below.
import type { IndexFunc, KubeObject, Store, WatchSpec } from "../../runtime/index.ts";
import type { CarriedChild } from "./carried.ts";
import type { Claims } from "./claims.ts";
import type { FoundCredentials } from "./credentials.ts";
import type { AnyKind, Kind, ManagedStatus, Pass, Step, Verdict } from "./kind.ts";
import type { Follow, Reference } from "./references.ts";
import type { Uses } from "./uses.ts";

/** What the work of the last change does now (withOperations). */
export type Settled<Status> =
  | { state: "running"; status: Partial<Status>; ready: Verdict; retryAfterMs: number }
  /** Ended well (or there was none): the status it ended with. */
  | { state: "ended"; status: Partial<Status> };

/**
 * Waiting for the work a change starts on the platform (its operations): recorded in status by
 * the change, looked at before the object is, and first looked at when such work usually ends.
 * A failure is thrown as a Refusal.
 */
export interface Waiting<Spec, Status, Client> {
  settle(run: Pass<Spec, Status, Client>): Promise<Settled<Status>>;
  record(operations: readonly unknown[]): Partial<Status>;
  firstLook(run: Pass<Spec, Status, Client>, operations: readonly unknown[]): number;
  /** Where the resource acts (its project), for a child made in the same create. */
  scope(spec: Spec, status: Status): string | undefined;
}

/** What an admission check is told: the resource, its credentials, and the controller's caches. */
export interface AdmissionRequest<Spec, Client> {
  obj: KubeObject;
  spec: Spec;
  credentials: FoundCredentials<Client> & { client: Client };
  cache<U extends KubeObject>(kind: {
    group: string;
    version: string;
    plural: string;
    kind: string;
  }): Store<U>;
  signal: AbortSignal;
  installationId: string;
}

/**
 * May the resource act with the credentials it found (withGrants: the operator's own key only
 * where a CredentialsGrant allows it)? Throws a Refusal when not; the watches and indexes it
 * needs wake the resources a change may concern.
 */
export interface Admission<Spec, Client> {
  admit(request: AdmissionRequest<Spec, Client>): Promise<void>;
  watches: WatchSpec[];
  indexes: Record<string, IndexFunc<KubeObject>>;
}

/** The options a kind is registered with. */
export interface Features<Spec, Status, Client> {
  /** Fields naming other resources of the namespace, resolved before anything else (references.ts). */
  references: Reference<Spec, Status>[];
  /** Resources of other kinds followed by the platform id they manage, without waiting (references.ts). */
  follows: Follow<Spec, Status>[];
  /** Platform objects of other kinds it uses: refused where another namespace holds them unshared (uses.ts). */
  uses: Uses<Spec, Status>[];
  /** What a resource holds besides its object, refused to a second claimant (claims.ts). */
  claims?: Claims<Spec, Status> | undefined;
  /** Kinds whose object this kind's create makes in the same request (carried.ts). */
  carries: CarriedChild[];
  waiting?: Waiting<Spec, Status, Client> | undefined;
  admission?: Admission<Spec, Client> | undefined;
  /** Connection details are written to the Secret and ConfigMap they name (publishing.ts). */
  publishing: boolean;
}

/** One option: sets what it adds to the features of a kind. */
export type Option<Spec, Status, Client> = (features: Features<Spec, Status, Client>) => void;

/** A kind with its options: what `managedController` runs, and what another kind's options may name. */
export interface Managed<Spec, Status extends ManagedStatus, Obj, S extends Step, Client> {
  kind: Kind<Spec, Status, Obj, S, Client>;
  features: Features<Spec, Status, Client>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyManaged = Managed<any, any, any, any, any>;

/** Registers a kind with its options. */
export function managed<Spec, Status extends ManagedStatus, Obj, S extends Step, Client>(
  kind: Kind<Spec, Status, Obj, S, Client>,
  ...options: Option<Spec, Status, Client>[]
): Managed<Spec, Status, Obj, S, Client> {
  const features: Features<Spec, Status, Client> = {
    references: [],
    follows: [],
    uses: [],
    carries: [],
    publishing: false,
  };
  for (const option of options) option(features);
  return { kind, features };
}

/** The options every kind may take that the layer itself provides. */
export function withReferences<Spec, Status, Client>(
  ...references: Reference<Spec, Status>[]
): Option<Spec, Status, Client> {
  return (f) => f.references.push(...references);
}

export function withFollows<Spec, Status, Client>(
  ...follows: Follow<Spec, Status>[]
): Option<Spec, Status, Client> {
  return (f) => f.follows.push(...follows);
}

export function withUses<Spec, Status, Client>(...uses: Uses<Spec, Status>[]): Option<Spec, Status, Client> {
  return (f) => f.uses.push(...uses);
}

export function withClaims<Spec, Status, Client>(claims: Claims<Spec, Status>): Option<Spec, Status, Client> {
  return (f) => (f.claims = claims);
}

/**
 * The create of this kind's object makes the object of a resource of `child` naming it; `unasked`:
 * where the spec makes the platform's create make that object even when it carries none.
 */
export function withCarried<Spec, Status, Client>(
  child: CarriedChild,
  made?: { unasked(spec: Spec): boolean },
): Option<Spec, Status, Client> {
  return (f) => f.carries.push(made ? { ...child, unasked: (spec) => made.unasked(spec as Spec) } : child);
}

export function withConnectionPublishing<Spec, Status, Client>(): Option<Spec, Status, Client> {
  return (f) => (f.publishing = true);
}

export function withWaiting<Spec, Status, Client>(
  waiting: Waiting<Spec, Status, Client>,
): Option<Spec, Status, Client> {
  return (f) => (f.waiting = waiting);
}

export function withAdmission<Spec, Status, Client>(
  admission: Admission<Spec, Client>,
): Option<Spec, Status, Client> {
  return (f) => (f.admission = admission);
}

/** For messages: `AnyKind` is what options see of another kind. */
export type { AnyKind };
