// The one managed-resource reconciler every kind runs on. Per pass: parse the spec, resolve its
// references, find its credentials and ask its admission (withGrants), then the lifecycle
// (lifecycle.ts). A failure becomes a reason on the conditions and the runtime retries as the one
// table says (refusal.ts, `errorPolicy`). Finalizers and queueing are the runtime's; the platform
// verbs are the kind's.
import {
  Action,
  isApiServerUnavailable,
  type Context,
  type ErrorAction,
  type KubeObject,
  type Reconciler,
  type ResourceKind,
} from "../../runtime/index.ts";
import {
  CredentialsLookup,
  secretKind,
  type Access,
  type FoundCredentials,
  type Secret,
} from "./credentials.ts";
import type { Managed } from "./features.ts";
import { ownerMark } from "./installation.ts";
import type { ManagedObject, ManagedStatus, Pass, Policies, Step } from "./kind.ts";
import { Lifecycle } from "./lifecycle.ts";
import { applyFollows, resolveReferences, type Resolution } from "./references.ts";
import { Refusal, describeFailure, errorAction, invalidSpec, keyRefusedWaitMs } from "./refusal.ts";
import { StatusWrite } from "./status-write.ts";

export interface ManagedReconcilerOptions<Client> {
  access: Access<Client>;
  /** Reads errors of the outside world (the platform's answers) as refusals (src/controllers/refusals.ts). */
  classify: (err: unknown) => Refusal | undefined;
  /** The clock (for schedules such as key rotation). */
  now?: (() => Date) | undefined;
  /** How long resources wait after the platform refused their credentials (default 5 min). */
  unauthorizedRetryMs?: number | undefined;
  /** While the platform's work runs, look again this often (default 5 s). */
  pollIntervalMs?: number | undefined;
  /** This installation's id, in the owner marks (default 00000000, for tests). */
  installationId?: string | undefined;
}

export class ManagedReconciler<
  Spec,
  S extends ManagedStatus,
  Obj,
  St extends Step,
  Client,
> implements Reconciler<ManagedObject<S>> {
  readonly installationId: string;
  private readonly m: Managed<Spec, S, Obj, St, Client>;
  private readonly lifecycle: Lifecycle<Spec, S, Obj, St, Client>;
  private readonly options: ManagedReconcilerOptions<Client>;
  private readonly lookup = new CredentialsLookup();
  private readonly unauthorizedRetryMs: number;

  constructor(m: Managed<Spec, S, Obj, St, Client>, options: ManagedReconcilerOptions<Client>) {
    this.m = m;
    this.options = options;
    this.unauthorizedRetryMs = options.unauthorizedRetryMs ?? keyRefusedWaitMs;
    this.installationId = options.installationId ?? "00000000";
    this.lifecycle = new Lifecycle(m, options);
  }

  async reconcile(cached: ManagedObject<S>, ctx: Context<ManagedObject<S>>): Promise<Action> {
    const w = new StatusWrite<S>(cached, this.m.kind.resource, ctx, this.now);
    const found: { credentials?: FoundCredentials<Client> } = {};
    try {
      const spec = this.parse(cached);
      const refs = this.resolve(spec, cached, ctx);
      w.place(this.m.kind.placement?.(refs.spec) ?? {});
      const policies = this.m.kind.policies(refs.spec);
      this.checkFixedId(policies, (cached.status ?? {}) as S);
      const client = await this.credentials(cached, policies, ctx, found);
      // While a reference waits nothing is sent (the lifecycle says why first); admission is
      // asked once the project the resource acts in is known.
      if (refs.state !== "waiting" || refs.createOnly)
        await this.admit(cached, refs.spec, found, client, ctx);
      return await this.lifecycle.apply(this.run(w, refs.spec, client, ctx, false), w, refs, policies);
    } catch (err) {
      return this.fail(w, ctx, err, found.credentials);
    }
  }

  async cleanup(cached: ManagedObject<S>, ctx: Context<ManagedObject<S>>): Promise<Action> {
    const parsed = this.m.kind.spec.safeParse(cached.spec ?? {});
    // Stored under an older schema: what it named cannot be known, so there is nothing to clean.
    if (!parsed.success) return Action.done();
    const w = new StatusWrite<S>(cached, this.m.kind.resource, ctx, this.now);
    const found: { credentials?: FoundCredentials<Client> } = {};
    const status = (cached.status ?? {}) as S;
    try {
      // A referenced resource that went first does not hold up the deletion: its id is in status.
      const refs = this.resolve(parsed.data, cached, ctx, status);
      // Never created (a reference never resolved): nothing on the platform to remove.
      if (refs.state === "waiting" && !refs.createOnly) return Action.done();
      const policies = this.m.kind.policies(refs.spec);
      let client: Client;
      try {
        client = await this.credentials(cached, policies, ctx, found);
        await this.admit(cached, refs.spec, found, client, ctx);
      } catch (err) {
        // Refused before it made anything (no credentials, no grant): nothing to remove. One that
        // holds an object waits for what it lacks (or deletionPolicy Orphan) rather than leave
        // the object behind unseen.
        if (err instanceof Refusal && this.madeNothing(status)) return Action.done();
        throw err;
      }
      return await this.lifecycle.cleanup(this.run(w, refs.spec, client, ctx, true), policies);
    } catch (err) {
      return this.fail(w, ctx, err, found.credentials);
    }
  }

  /** The retry of a failed pass, from the one table (refusal.ts). */
  errorPolicy(_obj: ManagedObject<S>, err: unknown): ErrorAction {
    return errorAction(describeFailure(err, this.options.classify));
  }

  private readonly now = (): Date => this.options.now?.() ?? new Date();

  /** The API server validated the spec already; this catches objects stored under an older schema. */
  private parse(obj: ManagedObject<S>): Spec {
    const result = this.m.kind.spec.safeParse(obj.spec ?? {});
    if (result.success) return result.data;
    const issues = result.error.issues.map((i) => `spec.${i.path.join(".")}: ${i.message}`).join("; ");
    throw invalidSpec(`invalid spec: ${issues}`);
  }

  /** The spec with its references resolved and what its follows lend it. */
  private resolve(
    spec: Spec,
    obj: ManagedObject<S>,
    ctx: Context<ManagedObject<S>>,
    recorded?: S,
  ): Resolution<Spec> {
    const { kind, features } = this.m;
    const cache = (k: ResourceKind) => ctx.cache(k);
    const refs = resolveReferences(spec, obj, kind.noun, features.references, cache, recorded);
    const status = (obj.status ?? {}) as S;
    return {
      ...refs,
      spec: applyFollows(refs.spec, status, obj.metadata.namespace, features.follows, cache),
    };
  }

  /** An id the spec adopts is fixed once the resource manages an object: another is a new resource. */
  private checkFixedId(policies: Policies, status: S): void {
    const { kind } = this.m;
    const recorded = kind.recorded(status);
    if (policies.adopts === undefined || recorded === undefined || policies.adopts === recorded) return;
    const field = kind.idField ?? "the adopted id";
    throw invalidSpec(
      `${field} ${policies.adopts} differs from ${kind.noun} ${recorded}, which this resource manages: ` +
        `${field} is fixed once set; set it to ${recorded} or remove it (another ${kind.noun} needs a new resource)`,
    );
  }

  /** Never sent anything that could have made an object: nothing recorded, no work, no lost answer. */
  private madeNothing(status: S): boolean {
    const ready = status.conditions?.find((c) => c.type === "Ready");
    return (
      this.m.kind.recorded(status) === undefined &&
      !status.operations?.length &&
      ready?.reason !== "OutcomeUnknown" &&
      ready?.reason !== "Creating"
    );
  }

  /**
   * The credentials of the resource and their client. Credentials the platform refused wait
   * (for every resource using them) until their Secret changes or the wait is over, with no
   * request sent. `found` keeps what was found for the failure path.
   */
  private async credentials(
    obj: ManagedObject<S>,
    policies: Policies,
    ctx: Context<ManagedObject<S>>,
    found: { credentials?: FoundCredentials<Client> },
  ): Promise<Client> {
    const credentials = await this.lookup.find(
      this.options.access,
      obj.metadata.namespace ?? "",
      policies.credentials,
      ctx.cache<Secret>(secretKind),
      ctx.client,
    );
    found.credentials = credentials;
    const waitMs = this.options.access.rejectedFor(credentials);
    if (waitMs !== undefined) {
      throw new Refusal(
        "Unauthorized",
        "credentials",
        `the platform refused the API key in Secret ${credentials.source} (401); waiting for the Secret to change`,
        { retryAfterMs: waitMs },
      );
    }
    return credentials.connect();
  }

  private async admit(
    obj: ManagedObject<S>,
    spec: Spec,
    found: { credentials?: FoundCredentials<Client> },
    client: Client,
    ctx: Context<ManagedObject<S>>,
  ): Promise<void> {
    const admission = this.m.features.admission;
    if (!admission || !found.credentials) return;
    await admission.admit({
      obj,
      spec,
      credentials: { ...found.credentials, client },
      cache: (kind) => ctx.cache(kind),
      signal: ctx.signal,
      installationId: this.installationId,
    });
  }

  private run(
    w: StatusWrite<S>,
    spec: Spec,
    client: Client,
    ctx: Context<ManagedObject<S>>,
    deleting: boolean,
  ): Pass<Spec, S, Client> {
    const { kind } = this.m;
    return {
      get obj() {
        return w.obj;
      },
      get status() {
        return w.status;
      },
      spec,
      client,
      kube: ctx.client,
      events: ctx.events,
      log: ctx.log,
      signal: ctx.signal,
      deleting,
      mark: ownerMark(
        this.installationId,
        kind.resource.kind,
        w.obj.metadata.namespace ?? "",
        w.obj.metadata.name ?? "",
      ),
      now: this.now,
      cache: <U extends KubeObject>(k: ResourceKind) => ctx.cache<U>(k),
      save: (changes) => w.save(changes),
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
    credentials: FoundCredentials<Client> | undefined,
  ): Promise<Action> {
    // No answer from the API server says nothing of the resource, and its status cannot be written
    // either: the error goes to the runtime as it is, which waits for the server instead of
    // counting it against the resource (read as a refusal, a few of them during a restart left
    // resources minutes of backoff after the server was back).
    if (ctx.signal.aborted || isApiServerUnavailable(err)) throw err;
    const failure = describeFailure(err, this.options.classify);
    const { refusal } = failure;
    const recorded = (refusal.status ?? {}) as Partial<S>;
    const verdict = ["False", refusal.reason, refusal.message] as const;
    try {
      if (failure.waiting) {
        // Its turn in a busy project: no failure, no Synced=False, no Warning.
        await w.write(recorded, { ready: [...verdict], reconciling: true });
      } else {
        await w.write(recorded, { ready: [...verdict], synced: [...verdict], stalled: failure.stalled });
      }
    } catch (writeErr) {
      ctx.log.warn({ err: String(writeErr) }, "could not record the failure in status");
    }
    if (refusal.kind === "credentials") {
      // Already waiting (refused for another resource): no second Warning.
      if (err instanceof Refusal)
        return Action.requeueAfter(refusal.retryAfterMs ?? this.unauthorizedRetryMs);
      if (credentials) return this.rejected(ctx, credentials);
    }
    if (refusal.warn) ctx.events.warning(refusal.reason, "Reconcile", refusal.message);
    throw refusal;
  }

  /** The platform refused these credentials: every resource using them waits, with one Warning. */
  private rejected(ctx: Context<ManagedObject<S>>, credentials: FoundCredentials<Client>): Action {
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
