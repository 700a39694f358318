// The lifecycle of a platform object, the same for every kind. Per pass, at most one change:
//
//   the last change's work still runs             → show it, look again when it should end
//   observe: the object does not exist            → the adopted id: Stalled; else create it (a
//                                                    recorded one gone: a Warning, unless observe
//                                                    refused to recreate it)
//   another resource or installation holds it     → refused, nothing sent
//   observe names a change                         → make it (an event, Ready=False with its reason)
//   it is as declared                              → publish its connection details, Ready
//
// and on deletion: the management and deletion policies, what the deletion needs first (the
// change observe names then), then delete and come back until the platform no longer shows it.
import { Action, type KubeObject } from "../../runtime/index.ts";
import { handOverUnasked, recoverCarried, toCarry } from "./carried.ts";
import type { Managed, Settled } from "./features.ts";
import { ownerAnnotation } from "./installation.ts";
import type { Answer, ManagedObject, ManagedStatus, Observation, Pass, Policies, Step } from "./kind.ts";
import { alreadyManaged, claimants, idClaim, markedOwner, rivalClaim } from "./ownership.ts";
import { observeInterval } from "./polling.ts";
import { publish, type PublishedStatus } from "./publishing.ts";
import type { Resolution } from "./references.ts";
import { outside } from "./refusal.ts";
import type { StatusWrite } from "./status-write.ts";
import { visibleRival } from "./claims.ts";
import { checkUses, notShared, shares, type Sharing } from "./uses.ts";

/** How long a resource waits for a referenced resource before looking again unwoken. */
const referenceWaitMs = 60_000;

/** The change the layer itself makes: the create. */
const createStep = { action: "Create", reason: "Creating", event: "Created", message: "creating" } as const;

type Exists<Obj, Status, S extends Step> = Extract<Observation<Obj, Status, S>, { exists: true }>;

export class Lifecycle<Spec, Status extends ManagedStatus, Obj, S extends Step, Client> {
  private readonly m: Managed<Spec, Status, Obj, S, Client>;
  private readonly pollMs: number;

  constructor(m: Managed<Spec, Status, Obj, S, Client>, options: { pollIntervalMs?: number | undefined }) {
    this.m = m;
    this.pollMs = options.pollIntervalMs ?? 5_000;
  }

  /** One pass of a resource that is not being deleted. */
  async apply(
    run: Pass<Spec, Status, Client>,
    w: StatusWrite<Status>,
    refs: Resolution<Spec>,
    policies: Policies,
  ): Promise<Action> {
    const { kind, features } = this.m;
    const observeOnly = policies.management === "ObserveOnly";
    if (refs.state === "waiting" && !refs.createOnly) return this.waitForReference(w, refs.message);
    const settled = await this.settle(run);
    if (settled.state === "running") {
      await w.write(settled.status, { ready: settled.ready, reconciling: true });
      return Action.requeueAfter(settled.retryAfterMs);
    }
    // An observe-only resource uses nothing: the holder of what it observes consents, and a holder
    // this cluster knows is asked before anything is read (its connection details among them).
    await this.unpublishedIfRefused(run, () =>
      observeOnly ? this.checkObserved(run, policies.adopts) : this.checkUses(run, false),
    );
    const observation = await kind.adapter.observe(run);
    if (!observation.exists) {
      this.checkAbsent(policies, observeOnly);
      if (refs.state === "waiting") return this.waitForReference(w, refs.message);
      this.checkUses(run, true);
      this.checkClaims(run, features.claims?.of(run.spec, run.status) ?? []);
      const recorded = kind.recorded(run.status);
      if (recorded !== undefined) {
        run.events.warning(
          `${kind.reasonPrefix}Gone`,
          "Create",
          `${kind.noun} ${recorded} was deleted outside; recreating it`,
        );
      }
      // A resource naming this one whose object the same request can make (carried.ts).
      const carry =
        features.carries.length === 0
          ? undefined
          : toCarry(run, features.carries, {
              scope: features.waiting?.scope(run.spec, run.status),
              credentials: policies.credentials,
            });
      return this.change(run, w, createStep, async () => {
        const answer = await kind.adapter.create(run, carry?.carried);
        if (!carry) return answer;
        const message = `${answer.message ?? createStep.message} ${carry.message}`;
        return { ...answer, status: { ...answer.status, ...carry.status } as Partial<Status>, message };
      });
    }
    await this.unpublishedIfRefused(run, () => this.checkHolder(run, observation, observeOnly));
    if (!observeOnly) {
      // What its create made for a child, when status lost it or nobody stood for it (carried.ts).
      const recovered =
        recoverCarried(run, features.carries, observation.marks) ??
        handOverUnasked(run, features.carries, {
          scope: features.waiting?.scope(run.spec, run.status),
          credentials: policies.credentials,
        });
      if (recovered) await run.save(recovered as Partial<Status>);
    }
    const step = observeOnly ? undefined : observation.next;
    if (step) return this.change(run, w, step, () => kind.adapter.update(run, step, observation.object));

    const published: PublishedStatus = features.publishing
      ? await publish(run as unknown as Parameters<typeof publish>[0], observation.connection)
      : {};
    const { ready } = observation;
    await w.write(
      { ...observation.status, ...settled.status, ...published },
      observeOnly
        ? {
            ready: ["True", "Observed", `${ready[2]}; observe-only`],
            synced: ["True", "Observed", "observe-only: nothing is changed on the platform"],
          }
        : // As declared but not usable yet (an endpoint or branch the platform still starts): work
          // under way that ends by itself, not a resource at rest (kstatus reads it as in progress).
          {
            ready,
            synced: ["True", "Synced", "the platform matches the spec"],
            reconciling: ready[0] !== "True",
          },
    );
    const again = Math.min(observation.lookAgainMs ?? Infinity, observeInterval(run.obj) ?? Infinity);
    return again !== Infinity ? Action.requeueAfter(again) : Action.done();
  }

  /** One pass of a resource being deleted; done when nothing of it is left to remove. */
  async cleanup(run: Pass<Spec, Status, Client>, policies: Policies): Promise<Action> {
    const { kind } = this.m;
    if (policies.management === "ObserveOnly" || policies.deletion === "Orphan") return Action.done();
    if ((await this.settle(run)).state === "running") return Action.requeueAfter(this.pollMs);
    const observation = await kind.adapter.observe(run);
    if (!observation.exists) return Action.done();
    // Another resource manages it: this one leaves it alone.
    if (this.holder(run, observation) || this.rival(run, [idClaim(observation.id)])) return Action.done();
    // What the spec says must come first (unprotect), so a deletion the platform refused goes on
    // once the spec allows it.
    if (observation.next) {
      await kind.adapter.update(run, observation.next, observation.object);
      return Action.requeueAfter(0);
    }
    const answer = await kind.adapter.delete(run, observation.object);
    if (answer === "gone") return Action.done();
    run.events.normal("Deleted", "Delete", answer.message ?? `deleted ${kind.noun} ${observation.id}`);
    // Come back at once to see it gone before the finalizer is released: the answer removed it
    // from the shared lists, so that look costs no request.
    return Action.requeueAfter(0);
  }

  /** The work of the last change, for kinds whose changes start some. */
  private settle(run: Pass<Spec, Status, Client>): Promise<Settled<Status>> {
    const waiting = this.m.features.waiting;
    return waiting ? waiting.settle(run) : Promise.resolve({ state: "ended", status: {} });
  }

  /** Not found: the adopted object must exist; observe-only observes only what exists. */
  private checkAbsent(policies: Policies, observeOnly: boolean): void {
    const { kind } = this.m;
    if (policies.adopts !== undefined) {
      const field = kind.idField === undefined ? "" : ` (${kind.idField})`;
      throw outside(
        `${kind.reasonPrefix}NotFound`,
        `${kind.noun} ${policies.adopts}${field} not found: make it, or name one that exists`,
      );
    }
    if (observeOnly) throw outside("NotFound", `the ${kind.noun} to observe does not exist (observe-only)`);
  }

  /** Refuses what the resource uses of another namespace's without its consent (uses.ts). */
  private checkUses(run: Pass<Spec, Status, Client>, creating: boolean): void {
    checkUses(this.m.features.uses, run.spec, run.status, run.obj, creating, (k) => run.cache(k));
  }

  /**
   * A refusal of what another namespace holds: the connection Secret written while it was allowed
   * goes (consent withdrawn leaves no copy of its password behind), then the refusal.
   */
  private async unpublishedIfRefused(run: Pass<Spec, Status, Client>, check: () => void): Promise<void> {
    try {
      check();
    } catch (err) {
      if (
        this.m.features.publishing &&
        (run.status as PublishedStatus).connectionSecret?.name !== undefined
      ) {
        const settled = await publish(run as unknown as Parameters<typeof publish>[0], undefined);
        await run.save(settled as Partial<Status>);
      }
      throw err;
    }
  }

  /** The resource of this kind that goes before this one for one of `claims`. */
  private rival(run: Pass<Spec, Status, Client>, claims: readonly string[]): KubeObject | undefined {
    const cache = run.cache<ManagedObject<Status>>(this.m.kind.resource);
    const holds = (o: KubeObject) =>
      this.m.kind.recorded(((o as ManagedObject<Status>).status ?? {}) as Status) !== undefined;
    return rivalClaim(run.obj, claims, cache, holds);
  }

  /** The other owner the object's mark names, if any (ownership.ts). */
  private holder(run: Pass<Spec, Status, Client>, observation: Exists<Obj, Status, S>) {
    const cache = run.cache<KubeObject>(this.m.kind.resource);
    return markedOwner(observation.marks?.[ownerAnnotation], run.mark, cache, run.obj);
  }

  /**
   * Refuses an object another holds, before anything is sent: the owner its mark names, else the
   * resource of this cluster that claims it first. An observe-only resource changes nothing, so
   * only a holder in another namespace refuses it: what another team holds is not read.
   */
  private checkHolder(
    run: Pass<Spec, Status, Client>,
    observation: Exists<Obj, Status, S>,
    observeOnly: boolean,
  ): void {
    const what = `${this.m.kind.noun} ${observation.id}`;
    const owner = this.holder(run, observation);
    if (observeOnly) {
      this.checkObserved(run, observation.id, owner?.other === "resource" ? [owner.holder] : []);
      return;
    }
    if (owner)
      throw alreadyManaged(run.obj, owner.other === "installation" ? "installation" : owner.holder, what);
    const rival = this.rival(run, [idClaim(observation.id)]);
    if (rival) throw alreadyManaged(run.obj, rival, what);
  }

  /**
   * An observe-only resource reads what another namespace's resource holds (claims, or marks as
   * its owner) only where that resource shares it with this namespace for observing.
   */
  private checkObserved(
    run: Pass<Spec, Status, Client>,
    id: string | undefined,
    marked: KubeObject[] = [],
  ): void {
    if (id === undefined) return;
    const holders = [
      ...marked,
      ...claimants(run.obj, idClaim(id), run.cache<KubeObject>(this.m.kind.resource)),
    ];
    const namespace = run.obj.metadata.namespace;
    const foreign = holders.find(
      (h) => visibleRival(run.obj, h) === undefined && !shares(this.sharingOf(h), namespace, "Observe"),
    );
    if (foreign) throw notShared(this.m.kind.idField ?? "spec", this.m.kind.noun, id, "Observe");
  }

  /** Whom a resource of this kind shares its object with (its spec's sharedWith). */
  private sharingOf(holder: KubeObject): readonly Sharing[] {
    const spec = this.m.kind.spec.safeParse((holder as ManagedObject<Status>).spec ?? {});
    return spec.success ? (this.m.kind.policies(spec.data).sharedWith ?? []) : [];
  }

  /** Refuses, before a create, what another resource of the cluster claims first. */
  private checkClaims(run: Pass<Spec, Status, Client>, claims: readonly string[]): void {
    const words = this.m.features.claims;
    for (const claim of claims) {
      const rival = this.rival(run, [claim]);
      if (rival && words) throw words.refused(run.spec, claim, visibleRival(run.obj, rival));
      if (rival) throw alreadyManaged(run.obj, rival, `the ${this.m.kind.noun} this resource would create`);
    }
  }

  private async waitForReference(w: StatusWrite<Status>, message: string): Promise<Action> {
    await w.write({}, { ready: ["False", "WaitingForReference", message], reconciling: true });
    return Action.requeueAfter(referenceWaitMs);
  }

  /** Makes the pass's one change and records it: an event, the work, Ready=False with its reason. */
  private async change(
    run: Pass<Spec, Status, Client>,
    w: StatusWrite<Status>,
    step: Step,
    call: () => Promise<Answer<Status>>,
  ): Promise<Action> {
    const answer = await call();
    const message = answer.message ?? step.message;
    run.events.normal(step.event ?? step.reason, step.action, message);
    const operations = answer.operations ?? [];
    const started = operations.length > 0;
    const waiting = this.m.features.waiting;
    await w.write({ ...answer.status, ...(waiting?.record(operations) ?? {}) } as Partial<Status>, {
      ready: ["False", step.reason, message],
      synced: ["True", step.reason, message],
      reconciling: started,
    });
    return Action.requeueAfter(started && waiting ? waiting.firstLook(run, operations) : 0);
  }
}
