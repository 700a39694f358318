// What every failure means, decided once. A kind's verbs and the layer's options refuse with a
// `Refusal`: a reason a user reads, a message, and which of a few kinds of refusal it is; never a
// delay. Errors of the outside world (the platform's answers, the Kubernetes API) become refusals
// through the classifier the operator wires in (src/controllers/refusals.ts). This table alone
// says, for each kind of refusal, whether the resource is Stalled and when it is tried again; the
// runtime carries out that retry (`errorAction`), and docs/controllers.md shows the table as
// generated from this code (`npm run generate`).
import type { ErrorAction } from "../../runtime/index.ts";

/**
 * - `spec`: the spec as it stands is refused; only a change of it (or of what it watches) helps.
 * - `outside`: something outside the spec must change first (a limit, a name another object holds,
 *   an object deleted elsewhere, a grant, a Secret, another resource's claim): Stalled, and tried
 *   again on a backoff that reaches a minute and stays there, so it goes on once the world changes.
 * - `credentials`: the platform refused the API key: every resource using it waits together.
 * - `transient`: clears by itself (a refusal of the moment, a lost answer, a failed operation):
 *   tried again with backoff from seconds, not Stalled.
 * - `turn`: no failure at all: the resource waits for its turn (a busy project, the rate budget).
 */
export type RefusalKind = "spec" | "outside" | "credentials" | "transient" | "turn";

export class Refusal<Status = unknown> extends Error {
  readonly reason: string;
  readonly kind: RefusalKind;
  /** When the platform said to try again (a 423's or 429's hint); the table decides otherwise. */
  readonly retryAfterMs: number | undefined;
  /** Recorded in status with the failure (the operations that failed, say). */
  readonly status: Partial<Status> | undefined;
  /** Told as a Warning event, besides the conditions (a failed operation). */
  readonly warn: boolean;
  constructor(
    reason: string,
    kind: RefusalKind,
    message: string,
    options: {
      retryAfterMs?: number | undefined;
      status?: Partial<Status>;
      warn?: boolean;
      cause?: unknown;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "Refusal";
    this.reason = reason;
    this.kind = kind;
    this.retryAfterMs = options.retryAfterMs;
    this.status = options.status;
    this.warn = options.warn ?? false;
  }
}

/** The spec is refused as it stands: Stalled until it changes. */
export function invalidSpec<Status>(message: string, status?: Partial<Status>): Refusal<Status> {
  return new Refusal<Status>("InvalidSpec", "spec", message, status === undefined ? {} : { status });
}

/** Something outside the spec refuses it (a missing object, a limit, a name taken): Stalled, retried. */
export function outside<Status>(reason: string, message: string, status?: Partial<Status>): Refusal<Status> {
  return new Refusal<Status>(reason, "outside", message, status === undefined ? {} : { status });
}

/** When a failed pass is tried again. */
export type Retry =
  | { after: number }
  /** Exponential backoff per resource from `from` ms (the runtime's own start when omitted), at most `max`. */
  | { backoff: { from?: number; max?: number } }
  /** Only a change of the spec (or of what the resource watches) helps; the resync looks again. */
  | "onChange";

export interface Outcome {
  retry: Retry;
  /** Reads as Stalled (kstatus: Failed): a person must act. */
  stalled: boolean;
  /** Not a failure: no Synced=False, no Warning (its turn in a busy project). */
  waiting: boolean;
}

/** A refused API key waits this long, or until its Secret changes. */
export const keyRefusedWaitMs = 300_000;

/** The one table: what each kind of refusal does. */
export const outcomes: Record<RefusalKind, (r: Refusal) => Outcome> = {
  spec: () => ({ retry: "onChange", stalled: true, waiting: false }),
  outside: () => ({ retry: { backoff: { from: 5_000, max: 60_000 } }, stalled: true, waiting: false }),
  credentials: () => ({ retry: { after: keyRefusedWaitMs }, stalled: true, waiting: false }),
  // From seconds: what clears by itself takes seconds (a branch not ready yet, an operation's retry).
  transient: (r) => ({
    retry: r.retryAfterMs === undefined ? { backoff: { from: 3_000 } } : { after: r.retryAfterMs },
    stalled: false,
    waiting: false,
  }),
  turn: (r) => ({ retry: { after: r.retryAfterMs ?? 1_000 }, stalled: false, waiting: true }),
};

/** A failure as the table reads it: the refusal (classified when it is not one) and its outcome. */
export interface Failure extends Outcome {
  refusal: Refusal;
}

/**
 * What a failure means. `classify` reads errors of the outside world (the platform's answers) as
 * refusals; anything else is an unexpected error, retried with backoff.
 */
export function describeFailure(err: unknown, classify: (err: unknown) => Refusal | undefined): Failure {
  const refusal =
    err instanceof Refusal
      ? err
      : (classify(err) ??
        new Refusal("ReconcileError", "transient", err instanceof Error ? err.message : String(err)));
  return { refusal, ...outcomes[refusal.kind](refusal) };
}

/** The runtime's action for a failure: the table's retry, in the runtime's terms. */
export function errorAction(failure: Outcome): ErrorAction {
  const { retry } = failure;
  if (retry === "onChange") return { kind: "onChange" };
  if ("after" in retry) return { kind: "retryAfter", ms: retry.after, failure: !failure.waiting };
  return { kind: "backoff", fromMs: retry.backoff.from, maxMs: retry.backoff.max };
}
