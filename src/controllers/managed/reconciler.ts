// The one managed-resource reconciler every kind runs on. Per pass: parse the spec, resolve the
// platform credentials, observe, then at most one of create / update (or only report, under
// observe-only), and write the status with the standard conditions. Failures become a reason on
// the conditions and a retry the runtime schedules. Finalizers and queueing are the runtime's;
// the platform verbs are the adapter's (types.ts).
import { UnauthorizedError } from "../../platform/index.ts";
import {
  Action,
  TerminalError,
  type Condition,
  type Context,
  type Reconciler,
  type ResourceKind,
  type StatusPatchOptions,
} from "../../runtime/index.ts";
import {
  CredentialsLookup,
  secretKind,
  type FoundCredentials,
  type PlatformAccess,
  type ResolvedCredentials,
  type Secret,
} from "../credentials.ts";
import { standardConditions, type Conditions } from "./conditions.ts";
import { describeFailure, isStalled, Problem } from "./failures.ts";
import type {
  Change,
  ExternalClient,
  ManagedKind,
  ManagedObject,
  Pass,
  Published,
  Verdict,
} from "./types.ts";

export interface ManagedReconcilerOptions {
  access: PlatformAccess;
  /** The clock (for schedules such as key rotation). */
  now?: (() => Date) | undefined;
  /** How long resources wait after the platform refused their credentials (default 5 min). */
  unauthorizedRetryMs?: number | undefined;
}

/** A status as written: its fields, and the standard conditions. */
type Status = Record<string, unknown> & { conditions?: Condition[] };

export class ManagedReconciler<Spec, S extends object, Diff = unknown> implements Reconciler<
  ManagedObject<S>
> {
  private readonly kind: ManagedKind<Spec>;
  private readonly external: ExternalClient<Spec, S, Diff>;
  private readonly options: ManagedReconcilerOptions;
  private readonly lookup = new CredentialsLookup();
  private readonly unauthorizedRetryMs: number;

  constructor(
    kind: ManagedKind<Spec>,
    external: ExternalClient<Spec, S, Diff>,
    options: ManagedReconcilerOptions,
  ) {
    this.kind = kind;
    this.external = external;
    this.options = options;
    this.unauthorizedRetryMs = options.unauthorizedRetryMs ?? 300_000;
  }

  async reconcile(cached: ManagedObject<S>, ctx: Context<ManagedObject<S>>): Promise<Action> {
    const writer = new StatusWrite<S>(cached, this.kind, ctx, this.now);
    const found: { credentials?: FoundCredentials } = {};
    try {
      const spec = this.parse(cached);
      const credentials = await this.credentials(cached, spec, ctx, found);
      const pass = this.pass(writer, spec, credentials, ctx);
      return await this.apply(pass, writer, spec);
    } catch (err) {
      return this.fail(writer, ctx, err, found.credentials);
    }
  }

  async cleanup(cached: ManagedObject<S>, ctx: Context<ManagedObject<S>>): Promise<Action> {
    const parsed = this.kind.spec.safeParse(cached.spec ?? {});
    // Stored under an older schema: what it named cannot be known, so there is nothing to clean.
    if (!parsed.success) return Action.done();
    const spec = parsed.data;
    if (this.kind.observeOnly(spec) || this.kind.orphanOnDelete(spec)) return Action.done();
    const writer = new StatusWrite<S>(cached, this.kind, ctx, this.now);
    const found: { credentials?: FoundCredentials } = {};
    try {
      const credentials = await this.credentials(cached, spec, ctx, found);
      const deletion = await this.external.delete(this.pass(writer, spec, credentials, ctx));
      return deletion.gone ? Action.done() : Action.requeueAfter(deletion.requeueAfterMs);
    } catch (err) {
      return this.fail(writer, ctx, err, found.credentials);
    }
  }

  private readonly now = (): Date => this.options.now?.() ?? new Date();

  /** The API server validated the spec already; this catches objects stored under an older schema. */
  private parse(obj: ManagedObject<S>): Spec {
    const result = this.kind.spec.safeParse(obj.spec ?? {});
    if (result.success) return result.data;
    const issues = result.error.issues.map((i) => `spec.${i.path.join(".")}: ${i.message}`).join("; ");
    throw Object.assign(new TerminalError(`invalid spec: ${issues}`), { reason: "InvalidSpec" });
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

  private pass(
    writer: StatusWrite<S>,
    spec: Spec,
    credentials: ResolvedCredentials,
    ctx: Context<ManagedObject<S>>,
  ): Pass<Spec, S> {
    return {
      get obj() {
        return writer.obj;
      },
      get status() {
        return (writer.obj.status ?? {}) as S;
      },
      spec,
      client: credentials.client,
      credentialsSource: credentials.source,
      kube: ctx.client,
      events: ctx.events,
      log: ctx.log,
      signal: ctx.signal,
      now: this.now,
      cache: (kind: ResourceKind) => ctx.cache(kind),
      save: (changes) => writer.save(changes),
    };
  }

  private async apply(pass: Pass<Spec, S>, writer: StatusWrite<S>, spec: Spec): Promise<Action> {
    const observation = await this.external.observe(pass);
    const observeOnly = this.kind.observeOnly(spec);
    if (observation.state === "busy") {
      await writer.write(observation.status, {
        ready: ["False", observation.reason, observation.message],
        reconciling: true,
      });
      return Action.requeueAfter(observation.retryAfterMs);
    }
    if (observation.state === "absent") {
      if (observeOnly) {
        throw new Problem("NotFound", "the platform object to observe does not exist (observe-only)", {
          retryAfterMs: 60_000,
        });
      }
      return this.changed(writer, await this.external.create(pass));
    }
    if (observeOnly) {
      await writer.write(observation.status, {
        ready: ["True", "Observed", `${observation.ready[2]}; observe-only`],
        synced: ["True", "Observed", "observe-only: nothing is changed on the platform"],
      });
      const published = await this.external.publish?.(pass);
      return observeAgain(sooner(observation.observeAfterMs, published));
    }
    if (!observation.upToDate) return this.changed(writer, await this.external.update(pass, observation));
    await writer.write(observation.status, {
      ready: observation.ready,
      synced: ["True", "Synced", "the platform matches the spec"],
    });
    const published = await this.external.publish?.(pass);
    return observeAgain(sooner(observation.observeAfterMs, published));
  }

  private async changed(writer: StatusWrite<S>, change: Change<S>): Promise<Action> {
    const verdict: Verdict = ["False", change.reason, change.message];
    await writer.write(change.status ?? {}, {
      ready: verdict,
      synced: ["True", change.reason, change.message],
      reconciling: change.inProgress,
    });
    return Action.requeueAfter(change.requeueAfterMs);
  }

  /**
   * Ready=False (and Synced=False) with a reason a user can act on, observedGeneration advanced,
   * Stalled when only a spec change can help; then the retry: refused credentials wait together
   * (no hot loop), everything else goes back to the runtime, which reads the error's shape.
   */
  private async fail(
    writer: StatusWrite<S>,
    ctx: Context<ManagedObject<S>>,
    err: unknown,
    credentials: FoundCredentials | undefined,
  ): Promise<Action> {
    if (ctx.signal.aborted) throw err;
    const failure = describeFailure(err);
    if (failure.waiting) {
      // Its turn in a busy project: no failure counted, no Synced=False, no Warning; look again
      // when the project's operations are expected to be done.
      try {
        await writer.write({}, { ready: ["False", failure.reason, failure.message], reconciling: true });
      } catch (writeErr) {
        ctx.log.warn({ err: String(writeErr) }, "could not record the wait in status");
      }
      const ms = (err as { retryAfterMs?: unknown }).retryAfterMs;
      return Action.requeueAfter(typeof ms === "number" ? ms : 1_000);
    }
    // A refused key needs a person, as a spec the platform refuses does: Stalled (kstatus: Failed),
    // while the resources still retry now and then and at once when the Secret changes.
    const stalled = isStalled(err) || err instanceof UnauthorizedError || err instanceof CredentialsRejected;
    const recorded = err instanceof Problem ? ((err.status ?? {}) as Partial<S>) : {};
    try {
      await writer.write(recorded, {
        ready: ["False", failure.reason, failure.message],
        synced: ["False", failure.reason, failure.message],
        stalled,
      });
    } catch (writeErr) {
      ctx.log.warn({ err: String(writeErr) }, "could not record the failure in status");
    }
    if (err instanceof CredentialsRejected) return Action.requeueAfter(err.retryAfterMs);
    if (err instanceof UnauthorizedError && credentials) {
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
    if (err instanceof Problem && err.reason === "OperationFailed") {
      ctx.events.warning(err.reason, "Reconcile", err.message);
    }
    throw err;
  }
}

/** Another resource's request with these credentials was refused: this one waits, sending nothing. */
class CredentialsRejected extends Problem {
  override readonly retryAfterMs: number;
  constructor(message: string, retryAfterMs: number) {
    super("Unauthorized", message, { retryAfterMs });
    this.retryAfterMs = retryAfterMs;
  }
}

/** The earlier of the observation's next look and the one publish asked for. */
function sooner(ms: number | undefined, published: Published | undefined | void): number | undefined {
  const asked = published ? published.requeueAfterMs : undefined;
  if (asked === undefined) return ms;
  return ms === undefined ? asked : Math.min(ms, asked);
}

function observeAgain(ms: number | undefined): Action {
  return ms !== undefined ? Action.requeueAfter(ms) : Action.done();
}

/**
 * The status side of one pass: a private copy of the object (the cached one is shared and must
 * not change), every write based on the latest, each with the standard conditions.
 */
class StatusWrite<S extends object> {
  obj: ManagedObject<S>;
  private readonly ctx: Context<ManagedObject<S>>;
  private readonly now: () => Date;

  private readonly identity: { apiVersion: string; kind: string };

  constructor(
    cached: ManagedObject<S>,
    kind: ManagedKind<unknown>,
    ctx: Context<ManagedObject<S>>,
    now: () => Date,
  ) {
    // List answers carry no apiVersion/kind per item; owner references need them.
    this.identity = { apiVersion: kind.resource.apiVersion, kind: kind.resource.kind };
    this.obj = { ...cached, ...this.identity, metadata: { ...cached.metadata } };
    this.ctx = ctx;
    this.now = now;
  }

  /**
   * Status fields merged over the current status (undefined removes one), conditions untouched,
   * written only onto the version this pass last read or wrote: intent (a key's pending name, its
   * id) must never be overwritten by a late write from a replica that lost its leadership.
   */
  async save(changes: Partial<S>): Promise<void> {
    await this.put({ ...(this.obj.status ?? {}), ...changes }, { precondition: true });
  }

  /** Status fields merged over the current status, with the standard conditions for this generation. */
  async write(fields: Partial<S>, conditions: Conditions): Promise<void> {
    const current = (this.obj.status ?? {}) as Status;
    const generation = this.obj.metadata.generation;
    await this.put({
      ...current,
      ...fields,
      observedGeneration: generation,
      conditions: standardConditions(current.conditions, generation, conditions, this.now()),
    });
  }

  private async put(next: Status, options?: StatusPatchOptions): Promise<void> {
    for (const key of Object.keys(next)) if (next[key] === undefined) delete next[key];
    const written = await this.ctx.status.patch(this.obj, next, options);
    this.obj = {
      ...written,
      ...this.identity,
      metadata: { ...written.metadata },
      status: (written.status ?? next) as S,
    };
  }
}
