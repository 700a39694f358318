// The lifecycle of a platform object, the same for every kind. Per pass, at most one change:
//
//   the last change's operations still run        → show them, look again when they should end
//   the object is not found                        → the adopted id: Stalled; gone: the kind says
//                                                    (recreate, or report); else create it
//   plan names a change                            → make it (an event, Ready=False with its reason)
//   it is as declared                              → publish its connection details (a due
//                                                    password reset is the pass's change), Ready
//
// and on deletion: the management and deletion policies, what the deletion needs first (plan),
// then delete and come back until the platform no longer shows it.
import { Action, type KubeObject } from "../../runtime/index.ts";
import { NotFoundError } from "../../platform/index.ts";
import { childToCreate, recoverChild } from "./children.ts";
import { annotatedMark } from "./installation.ts";
import { Connections } from "./connection.ts";
import { Problem, notFound } from "./errors.ts";
import { lastChange, statusOperations } from "./operations.ts";
import { firstLook } from "./polling.ts";
import type { Resolution } from "./references.ts";
import type { StatusWrite } from "./status-write.ts";
import { alreadyManaged, idClaim, markedOwner, rivalClaim } from "./ownership.ts";
import type { Answer, ManagedKind, ManagedObject, ManagedStatus, Pass, Step } from "./types.ts";

/** How long a resource waits for a referenced resource before looking again unwoken. */
const referenceWaitMs = 60_000;

/** A change the layer itself makes: the create, and a connection Secret's password reset. */
const createStep = { action: "Create", reason: "Creating", event: "Created", message: "creating" } as const;
const resetStep = {
  action: "ResetPassword",
  reason: "ResettingPassword",
  event: "PasswordReset",
  message: "resetting the connection Secret's password",
} as const;

export class Lifecycle<Spec, Status extends ManagedStatus, Obj, S extends Step> {
  private readonly kind: ManagedKind<Spec, Status, Obj, S>;
  private readonly pollMs: number;
  readonly connections = new Connections();

  constructor(kind: ManagedKind<Spec, Status, Obj, S>, options: { pollIntervalMs?: number | undefined }) {
    this.kind = kind;
    this.pollMs = options.pollIntervalMs ?? 5_000;
  }

  /** One pass of a resource that is not being deleted. */
  async apply(pass: Pass<Spec, Status>, w: StatusWrite<Status>, refs: Resolution<Spec>): Promise<Action> {
    const { kind } = this;
    const adapter = kind.adapter;
    const observeOnly = kind.managementPolicy(pass.spec) === "ObserveOnly";
    if (refs.state === "waiting" && !refs.createOnly) return this.waitForReference(w, refs.message);
    const ended: { operations?: Status["operations"] } = {};
    const running = await this.lastChange(pass, ended);
    if (running) {
      await w.write(running.status, { ready: running.ready, reconciling: true });
      return Action.requeueAfter(running.retryAfterMs);
    }
    const observed = await this.find(pass);
    if (observed === undefined) {
      this.checkAbsent(pass, observeOnly);
      if (refs.state === "waiting") return this.waitForReference(w, refs.message);
      this.checkClaims(
        pass,
        kind.claims?.(pass.spec, pass.status) ?? [],
        `the ${kind.noun} this resource would create`,
      );
      const recorded = kind.recorded(pass.status);
      if (recorded !== undefined) {
        pass.events.warning(
          `${kind.reasonPrefix}Gone`,
          "Create",
          `${kind.noun} ${recorded} was deleted outside; recreating it`,
        );
      }
      // A resource naming this one whose object the same request can make (children.ts).
      const child = childToCreate(kind, pass);
      return this.change(pass, w, createStep, "create", async () => {
        const answer = await adapter.create(pass, child?.create);
        if (!child) return answer;
        const message = `${answer.message ?? createStep.message} ${child.message}`;
        return { ...answer, status: { ...answer.status, ...child.status }, message };
      });
    }
    if (!observeOnly) {
      this.checkOwner(pass, observed);
      // What its create made for a child, when status lost it (children.ts).
      const recovered = recoverChild(kind, pass, observed);
      if (recovered) await pass.save(recovered);
    }
    const step = observeOnly ? undefined : adapter.plan(pass, observed);
    if (step) return this.change(pass, w, step, step, () => adapter.apply(pass, step, observed));

    const ready = adapter.ready(observed);
    await w.write(
      {
        ...adapter.status(observed, pass),
        ...adapter.settled?.(pass),
        operations: ended.operations,
      },
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
    let again = adapter.observeAfterMs?.(pass, observed);
    const details = adapter.connection?.(pass, observed);
    if (details) {
      const published = await this.connections.publish(pass, details, observeOnly);
      if (published && "reset" in published) {
        const { reset, target } = published;
        if (observeOnly) {
          throw new Problem(
            "ObserveOnly",
            `a password reset of role ${target.role} was asked for (${reset}), and an observe-only resource changes nothing on the platform`,
            { retry: "onChange" },
          );
        }
        const answer = () => this.connections.reset(pass, target, reset);
        return this.change(pass, w, resetStep, undefined, answer as () => Promise<Answer<Obj, Status>>);
      }
      if (published) again = Math.min(again ?? Infinity, published.requeueAfterMs);
    }
    return again !== undefined ? Action.requeueAfter(again) : Action.done();
  }

  /** One pass of a resource being deleted; done when nothing of it is left to remove. */
  async cleanup(pass: Pass<Spec, Status>): Promise<Action> {
    const { kind } = this;
    const adapter = kind.adapter;
    const uid = pass.obj.metadata.uid ?? "";
    if (kind.managementPolicy(pass.spec) === "ObserveOnly") return this.forgotten(uid);
    if (kind.deletionPolicy(pass.spec) === "Orphan") {
      await adapter.orphan?.(pass);
      return this.forgotten(uid);
    }
    if (await this.lastChange(pass, {})) return Action.requeueAfter(this.pollMs);
    let observed: Obj | undefined;
    try {
      observed = await this.find(pass);
    } catch (err) {
      // A project that does not exist holds nothing of this resource: nothing to wait for.
      if (err instanceof Problem && err.reason === "ProjectNotFound") return this.forgotten(uid);
      throw err;
    }
    if (observed === undefined) return this.forgotten(uid);
    // Another resource manages it: this one leaves it alone.
    if (this.owner(pass, observed) || this.rival(pass, [idClaim(adapter.id(observed))]))
      return this.forgotten(uid);
    // What the spec says must come first (unprotect), so a deletion the platform refused goes on
    // once the spec allows it.
    const step = adapter.plan(pass, observed);
    if (step) {
      await this.send(pass, step, () => adapter.apply(pass, step, observed));
      return Action.requeueAfter(0);
    }
    const answer = await this.send(pass, "delete", () => adapter.delete(pass, observed));
    if (answer === "gone") return this.forgotten(uid);
    pass.events.normal("Deleted", "Delete", answer.message ?? `deleted ${kind.noun} ${adapter.id(observed)}`);
    // Come back at once to see it gone before the finalizer is released: the answer removed it
    // from the project's list (project.ts), so that look costs no request.
    return Action.requeueAfter(0);
  }

  private forgotten(uid: string): Action {
    this.connections.forget(uid);
    this.kind.adapter.forget?.(uid);
    return Action.done();
  }

  /** The operations of the last change, for kinds whose changes start them. */
  private lastChange(pass: Pass<Spec, Status>, ended: { operations?: Status["operations"] }) {
    const projectId = this.kind.projectOf?.(pass.spec, pass.status);
    return projectId === undefined ? Promise.resolve(undefined) : lastChange(pass, projectId, ended);
  }

  /** The object, or undefined; a project that does not exist is Stalled (it rarely appears by itself). */
  private async find(pass: Pass<Spec, Status>): Promise<Obj | undefined> {
    try {
      return await this.kind.adapter.find(pass);
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
      const projectId = this.kind.projectOf?.(pass.spec, pass.status);
      throw notFound("ProjectNotFound", `project ${projectId ?? "(none)"} not found`);
    }
  }

  /** Not found: the adopted object must exist; a recorded one the kind may refuse to recreate. */
  private checkAbsent(pass: Pass<Spec, Status>, observeOnly: boolean): void {
    const { kind } = this;
    const adopted = kind.adopts(pass.spec);
    const project = kind.projectOf?.(pass.spec, pass.status);
    // A kind whose object is the project itself names no project it is in.
    const where = project === undefined || project === adopted ? "" : ` in project ${project}`;
    if (adopted !== undefined) {
      throw notFound(`${kind.reasonPrefix}NotFound`, `${kind.noun} ${adopted} not found${where}`);
    }
    if (kind.recorded(pass.status) !== undefined) {
      const vanished = kind.adapter.vanished?.(pass);
      if (vanished) throw vanished;
    }
    if (observeOnly) {
      throw notFound("NotFound", `the ${kind.noun} to observe does not exist (observe-only)`);
    }
  }

  /** The resource that goes before this one for one of `claims`. */
  private rival(pass: Pass<Spec, Status>, claims: readonly string[]): KubeObject | undefined {
    const cache = pass.cache<ManagedObject<Status>>(this.kind.resource);
    const holds = (o: KubeObject) =>
      this.kind.recorded(((o as ManagedObject<Status>).status ?? {}) as Status) !== undefined;
    return rivalClaim(pass.obj, claims, cache, holds);
  }

  /** The other owner the object's mark names, if any (ownership.ts). */
  private owner(pass: Pass<Spec, Status>, observed: Obj) {
    const cache = pass.cache<KubeObject>(this.kind.resource);
    const { adapter } = this.kind;
    const annotations = adapter.annotationsOf?.(observed);
    const mark = adapter.markOf?.(observed) ?? (annotations && annotatedMark({ annotations }));
    return markedOwner(mark, pass.mark, cache, pass.obj);
  }

  /**
   * Refuses an object another owns, before anything is sent: the owner its mark names, else the
   * resource of this cluster that claims it first.
   */
  private checkOwner(pass: Pass<Spec, Status>, observed: Obj): void {
    const what = `${this.kind.noun} ${this.kind.adapter.id(observed)}`;
    const owner = this.owner(pass, observed);
    if (owner)
      throw alreadyManaged(pass.obj, owner.other === "installation" ? "installation" : owner.holder, what);
    this.checkClaims(pass, [idClaim(this.kind.adapter.id(observed))], what);
  }

  /** Refuses, before anything is sent, what another resource of the cluster claims first. */
  private checkClaims(pass: Pass<Spec, Status>, claims: readonly string[], what: string): void {
    for (const claim of claims) {
      const rival = this.rival(pass, [claim]);
      if (rival)
        throw this.kind.adapter.claimRefused?.(pass, claim, rival) ?? alreadyManaged(pass.obj, rival, what);
    }
  }

  private async waitForReference(w: StatusWrite<Status>, message: string): Promise<Action> {
    await w.write({}, { ready: ["False", "WaitingForReference", message], reconciling: true });
    return Action.requeueAfter(referenceWaitMs);
  }

  /** Sends a change, naming a refusal in the kind's words (a change of its own; not the layer's). */
  private async send<T>(
    pass: Pass<Spec, Status>,
    step: S | "create" | "delete" | undefined,
    call: () => Promise<T>,
  ): Promise<T> {
    try {
      return await call();
    } catch (err) {
      throw step === undefined ? err : (this.kind.adapter.explain?.(err, pass, step) ?? err);
    }
  }

  /** Makes the pass's one change and records it: an event, the operations, Ready=False with its reason. */
  private async change(
    pass: Pass<Spec, Status>,
    w: StatusWrite<Status>,
    step: Step,
    explained: S | "create" | undefined,
    call: () => Promise<Answer<Obj, Status>>,
  ): Promise<Action> {
    const answer = await this.send(pass, explained, call);
    const message = answer.message ?? step.message;
    pass.events.normal(step.event ?? step.reason, step.action, message);
    const started = answer.operations.length > 0;
    await w.write(
      {
        ...(answer.object === undefined ? {} : this.kind.adapter.status(answer.object, pass)),
        ...answer.status,
        operations: statusOperations(answer.operations),
      } as Partial<Status>,
      {
        ready: ["False", step.reason, message],
        synced: ["True", step.reason, message],
        reconciling: started,
      },
    );
    return Action.requeueAfter(started ? firstLook(pass.client, answer.operations, this.pollMs) : 0);
  }
}
