// The one managed-resource reconciler every kind runs on. Per pass: parse the spec, resolve its
// references, find the platform credentials, then the lifecycle (lifecycle.ts). A failure becomes
// a reason on the conditions (errors.ts) and the runtime retries as the same table says
// (`errorPolicy`). Finalizers and queueing are the runtime's; the platform verbs are the kind's.
import { UnauthorizedError, type PlatformClient } from "../../platform/index.ts";
import {
  Action,
  objectKey,
  type Context,
  type ErrorAction,
  type KubeObject,
  type Reconciler,
  type ResourceKind,
  type Store,
} from "../../runtime/index.ts";
import {
  CredentialsLookup,
  secretKind,
  type FoundCredentials,
  type PlatformAccess,
  type ResolvedCredentials,
  type Secret,
} from "../credentials.ts";
import { Delay, Problem, describeFailure, errorAction, invalidSpec } from "./errors.ts";
import { grantsOf, type GrantRequest } from "./grants.ts";
import { ownerMark } from "./installation.ts";
import { Lifecycle } from "./lifecycle.ts";
import { handedOver } from "./children.ts";
import { resolveReferences, type Resolution } from "./references.ts";
import { StatusWrite } from "./status-write.ts";
import type { ManagedKind, ManagedObject, ManagedStatus, Pass, Reference, Step } from "./types.ts";

export interface ManagedReconcilerOptions {
  access: PlatformAccess;
  /** The clock (for schedules such as key rotation). */
  now?: (() => Date) | undefined;
  /** How long resources wait after the platform refused their credentials (default 5 min). */
  unauthorizedRetryMs?: number | undefined;
  /** While platform operations run, look again this often (default 5 s). */
  pollIntervalMs?: number | undefined;
  /** This installation's id, in the owner marks (default 00000000, for tests). */
  installationId?: string | undefined;
  /** CredentialsGrants are watched (false: a namespaced install that may not read them). */
  grants?: boolean | undefined;
}

export class ManagedReconciler<Spec, S extends ManagedStatus, Obj, St extends Step> implements Reconciler<
  ManagedObject<S>
> {
  readonly lifecycle: Lifecycle<Spec, S, Obj, St>;
  private readonly kind: ManagedKind<Spec, S, Obj, St>;
  private readonly options: ManagedReconcilerOptions;
  private readonly lookup = new CredentialsLookup();
  private readonly unauthorizedRetryMs: number;
  readonly installationId: string;

  constructor(kind: ManagedKind<Spec, S, Obj, St>, options: ManagedReconcilerOptions) {
    this.kind = kind;
    this.options = options;
    this.unauthorizedRetryMs = options.unauthorizedRetryMs ?? Delay.unauthorized;
    this.installationId = options.installationId ?? "00000000";
    this.lifecycle = new Lifecycle(kind, options);
  }

  async reconcile(cached: ManagedObject<S>, ctx: Context<ManagedObject<S>>): Promise<Action> {
    const w = new StatusWrite<S>(cached, this.kind.resource, ctx, this.now);
    const found: { credentials?: FoundCredentials } = {};
    try {
      const spec = this.parse(cached);
      const refs = this.references(spec, cached, ctx);
      const credentials = await this.credentials(cached, refs.spec, ctx, found);
      // While a reference waits nothing is sent (the lifecycle says why first); the grant is
      // checked once the project the resource acts in is known.
      if (refs.state !== "waiting" || refs.createOnly)
        await this.checkGrant(cached, refs.spec, credentials, ctx);
      return await this.lifecycle.apply(this.pass(w, refs.spec, credentials, ctx, false), w, refs);
    } catch (err) {
      return this.fail(w, ctx, err, found.credentials);
    }
  }

  async cleanup(cached: ManagedObject<S>, ctx: Context<ManagedObject<S>>): Promise<Action> {
    const parsed = this.kind.spec.safeParse(cached.spec ?? {});
    // Stored under an older schema: what it named cannot be known, so there is nothing to clean.
    if (!parsed.success) return Action.done();
    const w = new StatusWrite<S>(cached, this.kind.resource, ctx, this.now);
    const found: { credentials?: FoundCredentials } = {};
    try {
      // A referenced resource that went first does not hold up the deletion: its id is in status.
      const refs = this.references(parsed.data, cached, ctx, cached.status);
      // Never created (a reference never resolved): nothing on the platform to remove.
      if (refs.state === "waiting" && !refs.createOnly) return Action.done();
      const credentials = await this.credentials(cached, refs.spec, ctx, found);
      try {
        await this.checkGrant(cached, refs.spec, credentials, ctx);
      } catch (err) {
        // Never granted, it never made anything: nothing to remove. One that holds an object waits
        // for a grant (or deletionPolicy Orphan) rather than leave it behind unseen.
        const status = (cached.status ?? {}) as S;
        if (this.kind.recorded(status) === undefined && !status.operations?.length) return Action.done();
        throw err;
      }
      return await this.lifecycle.cleanup(this.pass(w, refs.spec, credentials, ctx, true));
    } catch (err) {
      return this.fail(w, ctx, err, found.credentials);
    }
  }

  /** The retry of a failed pass, from the one table (errors.ts). */
  errorPolicy(_obj: ManagedObject<S>, err: unknown): ErrorAction {
    return errorAction(describeFailure(err));
  }

  private readonly now = (): Date => this.options.now?.() ?? new Date();

  /** The API server validated the spec already; this catches objects stored under an older schema. */
  private parse(obj: ManagedObject<S>): Spec {
    const result = this.kind.spec.safeParse(obj.spec ?? {});
    if (result.success) return result.data;
    const issues = result.error.issues.map((i) => `spec.${i.path.join(".")}: ${i.message}`).join("; ");
    throw invalidSpec(`invalid spec: ${issues}`);
  }

  private references(
    spec: Spec,
    obj: ManagedObject<S>,
    ctx: Context<ManagedObject<S>>,
    recorded?: S,
  ): Resolution<Spec> {
    const refs = this.kind.references ?? [];
    const cache = (ref: Reference<Spec, S>): Store<KubeObject> => ctx.cache(ref.kind);
    return resolveReferences(spec, refs, obj.metadata.namespace, cache, recorded);
  }

  /**
   * The credentials of the resource and their client. Credentials the platform refused wait
   * (for every resource using them) until their Secret changes or the wait is over, with no
   * request sent. `found` keeps what was found for the failure path.
   */
  private async credentials(
    obj: ManagedObject<S>,
    spec: Spec,
    ctx: Context<ManagedObject<S>>,
    found: { credentials?: FoundCredentials },
  ): Promise<ResolvedCredentials> {
    const credentials = await this.lookup.find(
      this.options.access,
      obj.metadata.namespace ?? "",
      this.kind.credentials(spec),
      ctx.cache<Secret>(secretKind),
      ctx.client,
    );
    found.credentials = credentials;
    const waitMs = this.options.access.rejectedFor(credentials);
    if (waitMs !== undefined) {
      throw new CredentialsRejected(
        `the platform refused the API key in Secret ${credentials.source} (401); waiting for the Secret to change`,
        waitMs,
      );
    }
    return { ...credentials, client: await credentials.connect() };
  }

  /**
   * The operator's default credentials act only where a CredentialsGrant allows it: before
   * anything is sent, a namespace without one is told what is missing and who can grant it. A key
   * in a Secret of the resource's own namespace (spec.credentials, or the operator's own key in a
   * namespaced install) needs no grant: its account is the namespace's own business. A project
   * a resource of the namespace created (a Project, with createProjects) is the namespace's own.
   */
  private async checkGrant(
    obj: ManagedObject<S>,
    spec: Spec,
    credentials: ResolvedCredentials,
    ctx: Context<ManagedObject<S>>,
  ): Promise<void> {
    const namespace = obj.metadata.namespace ?? "";
    if (!credentials.isDefault || credentials.namespace === namespace) return;
    if (this.options.grants === false) {
      throw new Problem(
        "NotGranted",
        `this installation of the operator may not read CredentialsGrants (a namespaced install), so its own key serves only namespace ${credentials.namespace}: set spec.credentials to a Secret of this namespace`,
        { retry: { after: Delay.userAction }, stalled: true },
      );
    }
    const want = this.kind.access(spec);
    const denied = grantsOf((kind) => ctx.cache(kind)).check(namespace, want);
    if (denied && !(await this.madeInNamespace(namespace, want, credentials.client, ctx))) {
      throw new Problem(denied.reason, denied.message, { retry: { after: Delay.secret }, stalled: true });
    }
  }

  /** Whether the one project `want` names was created by a resource of the namespace, as the platform confirms. */
  private async madeInNamespace(
    namespace: string,
    want: GrantRequest,
    client: PlatformClient,
    ctx: Context<ManagedObject<S>>,
  ): Promise<boolean> {
    const projectId = want.projectId;
    if (projectId === undefined || want.createProject || want.mintApiKeys) return false;
    for (const maker of this.kind.projectMakers ?? []) {
      for (const made of ctx.cache(maker.kind).list(namespace)) {
        if (made.metadata.deletionTimestamp || maker.created(made) !== projectId) continue;
        const mark = ownerMark(this.installationId, maker.kind.kind, namespace, made.metadata.name ?? "");
        if (await maker.confirm(client, projectId, mark, ctx.signal)) return true;
      }
    }
    return false;
  }

  private pass(
    w: StatusWrite<S>,
    spec: Spec,
    credentials: ResolvedCredentials,
    ctx: Context<ManagedObject<S>>,
    deleting: boolean,
  ): Pass<Spec, S> {
    return {
      get obj() {
        return w.obj;
      },
      get status() {
        return w.status;
      },
      spec,
      client: credentials.client,
      credentialsSource: credentials.source,
      kube: ctx.client,
      events: ctx.events,
      log: ctx.log,
      signal: ctx.signal,
      deleting,
      handedOver: handedOver(this.kind, spec, w.obj, (kind) => ctx.cache(kind)),
      mark: ownerMark(
        this.installationId,
        this.kind.resource.kind,
        w.obj.metadata.namespace ?? "",
        w.obj.metadata.name ?? "",
      ),
      now: this.now,
      cache: <U extends KubeObject>(kind: ResourceKind) => ctx.cache<U>(kind),
      save: (changes) => w.save(changes),
      // The resource is its ticket in its project's gate: turns are taken in the order asked.
      mutation: () => ({ signal: ctx.signal, ticket: objectKey(w.obj) }),
      wake: () => ctx.wake(),
    };
  }

  /**
   * Ready=False (and Synced=False) with a reason a user can act on, observedGeneration advanced,
   * Stalled when a person must act; then the retry the table chooses. Refused credentials wait
   * together (no hot loop), with one Warning for all the resources using them.
   */
  private async fail(
    w: StatusWrite<S>,
    ctx: Context<ManagedObject<S>>,
    err: unknown,
    credentials: FoundCredentials | undefined,
  ): Promise<Action> {
    if (ctx.signal.aborted) throw err;
    const failure = describeFailure(err);
    const recorded = err instanceof Problem ? ((err.status ?? {}) as Partial<S>) : {};
    try {
      if (failure.waiting) {
        // Its turn in a busy project: no failure, no Synced=False, no Warning.
        await w.write(recorded, { ready: ["False", failure.reason, failure.message], reconciling: true });
      } else {
        await w.write(recorded, {
          ready: ["False", failure.reason, failure.message],
          synced: ["False", failure.reason, failure.message],
          stalled: failure.stalled,
        });
      }
    } catch (writeErr) {
      ctx.log.warn({ err: String(writeErr) }, "could not record the failure in status");
    }
    if (err instanceof CredentialsRejected) return Action.requeueAfter(err.waitMs);
    if (err instanceof UnauthorizedError && credentials) return this.rejected(ctx, credentials);
    if (err instanceof Problem && err.reason === "OperationFailed") {
      ctx.events.warning(err.reason, "Reconcile", err.message);
    }
    throw err;
  }

  /** The platform refused these credentials: every resource using them waits, with one Warning. */
  private rejected(ctx: Context<ManagedObject<S>>, credentials: FoundCredentials): Action {
    this.options.access.reject(credentials, this.unauthorizedRetryMs);
    const every = `${Math.round(this.unauthorizedRetryMs / 1000)} s`;
    if (credentials.isDefault) {
      ctx.events.warning(
        "OperatorCredentialsRejected",
        "Authenticate",
        `the platform refused the operator's own API key (Secret ${credentials.source}); replace that key: ` +
          `resources using it retry every ${every}, or at once when the Secret changes`,
      );
    } else {
      ctx.events.warning(
        "CredentialsRejected",
        "Authenticate",
        `the platform refused the API key in Secret ${credentials.source}; update that Secret`,
      );
    }
    return Action.requeueAfter(this.unauthorizedRetryMs);
  }
}

/** Another resource's request with these credentials was refused: this one waits, sending nothing. */
class CredentialsRejected extends Problem {
  readonly waitMs: number;
  constructor(message: string, waitMs: number) {
    super("Unauthorized", message, { retry: { after: waitMs }, stalled: true });
    this.waitMs = waitMs;
  }
}
