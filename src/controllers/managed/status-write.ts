// The status side of one pass: a private copy of the object (the cached one is shared and must
// not change), every write based on the latest, each with the standard conditions.
import type { Condition, Context, StatusPatchOptions } from "../../runtime/index.ts";
import { standardConditions, type Conditions } from "./conditions.ts";
import type { ManagedObject } from "./kind.ts";

/** A status as written: its fields, and the standard conditions. */
type Status = Record<string, unknown> & { conditions?: Condition[] };

export class StatusWrite<S extends object> {
  obj: ManagedObject<S>;
  private readonly ctx: Context<ManagedObject<S>>;
  private readonly now: () => Date;
  private readonly identity: { apiVersion: string; kind: string };
  /** Fields written where status has none yet (the kind's placement). */
  private placed: Partial<S> = {};

  constructor(
    cached: ManagedObject<S>,
    identity: { apiVersion: string; kind: string },
    ctx: Context<ManagedObject<S>>,
    now: () => Date,
  ) {
    // List answers carry no apiVersion/kind per item; owner references need them.
    this.identity = { apiVersion: identity.apiVersion, kind: identity.kind };
    this.obj = { ...cached, ...this.identity, metadata: { ...cached.metadata } };
    this.ctx = ctx;
    this.now = now;
  }

  get status(): S {
    return (this.obj.status ?? {}) as S;
  }

  /**
   * Status fields merged over the current status (undefined removes one), conditions untouched,
   * written only onto the version this pass last read or wrote: intent (a key's pending name, its
   * id) must never be overwritten by a late write from a replica that lost its leadership.
   */
  async save(changes: Partial<S>): Promise<void> {
    await this.put({ ...(this.obj.status ?? {}), ...changes }, { precondition: true });
  }

  /** Fields every write of the pass gives where status has none yet (where the resource acts). */
  place(fields: Partial<S>): void {
    this.placed = Object.fromEntries(
      Object.entries(fields).filter(([, value]) => value !== undefined),
    ) as Partial<S>;
  }

  /** Status fields merged over the current status, with the standard conditions for this generation. */
  async write(fields: Partial<S>, conditions: Conditions): Promise<void> {
    const current = (this.obj.status ?? {}) as Status;
    const generation = this.obj.metadata.generation;
    await this.put({
      ...this.placed,
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
