// What each error means, in one table for every kind: the reason a user reads on the conditions,
// whether the resource is Stalled, and when it is tried again. The runtime only carries out the
// retry this table chooses (`errorPolicy`); the platform client only says what happened.
import {
  BadRequestError,
  LockedError,
  NotFoundError,
  OutcomeUnknownError,
  PasswordNotStoredError,
  ProjectBusyError,
  RateLimitedError,
  UnauthorizedError,
  UnprocessableError,
} from "../../platform/index.ts";
import type { ErrorAction } from "../../runtime/index.ts";
import { CredentialsNotFoundError } from "../credentials.ts";

/** How long a failure waits before the next try, by what it waits for. */
export const Delay = {
  /** Something the spec names does not exist (a project, a branch): it rarely appears by itself. */
  notFound: 60_000,
  /** Another actor holds what the change needs (a branch's read-write endpoint, a name). */
  conflict: 60_000,
  /** A Secret the resource needs is missing or not usable; its watch wakes the resource sooner. */
  secret: 60_000,
  /** The platform refused the key: every resource using it waits together, or until its Secret changes. */
  unauthorized: 300_000,
  /** A refused deletion (a protected branch): a spec change wakes it sooner. */
  deleteRefused: 30_000,
  /** Only the user can unblock it (consent to a password reset, a spec the platform refuses). */
  userAction: 600_000,
  /** A refusal in the current state (422): backed off from this, doubling. */
  refusedFrom: 3_000,
} as const;

/** When a failed pass is tried again. */
export type Retry =
  | { after: number }
  /** Exponential backoff per resource, starting at `from` ms (the runtime's own start when omitted). */
  | { backoff: true; from?: number }
  /** Only a change of the spec (or of what the resource watches) helps. */
  | "onChange";

export interface Failure {
  reason: string;
  message: string;
  retry: Retry;
  /** Reads as Stalled (kstatus: Failed): a person must act, though it is still retried now and then. */
  stalled: boolean;
  /** Not a failure: the resource waits for something that ends by itself (its turn in a busy project). */
  waiting: boolean;
}

/**
 * A failure a kind (or the layer) names itself: a project that does not exist, a branch another
 * resource claims. `status` is recorded with it (the operations that failed, say).
 */
export class Problem<Status = unknown> extends Error {
  readonly reason: string;
  readonly retry: Retry;
  readonly stalled: boolean;
  readonly status: Partial<Status> | undefined;
  constructor(
    reason: string,
    message: string,
    options: { retry?: Retry; stalled?: boolean; status?: Partial<Status> } = {},
  ) {
    super(message);
    this.name = "Problem";
    this.reason = reason;
    this.retry = options.retry ?? { backoff: true };
    this.stalled = options.stalled ?? options.retry === "onChange";
    this.status = options.status;
  }
}

/** Not found, waits for a person: Stalled, looked at again now and then. */
export function notFound<Status>(reason: string, message: string, status?: Partial<Status>): Problem<Status> {
  return new Problem<Status>(reason, message, {
    retry: { after: Delay.notFound },
    stalled: true,
    ...(status === undefined ? {} : { status }),
  });
}

/** The spec is refused as it stands: Stalled until it changes. */
export function invalidSpec<Status>(message: string, status?: Partial<Status>): Problem<Status> {
  return new Problem<Status>("InvalidSpec", message, {
    retry: "onChange",
    ...(status === undefined ? {} : { status }),
  });
}

/** Error messages never carry key values: the platform client redacts them before they are built. */
export function describeFailure(err: unknown): Failure {
  const message = err instanceof Error ? err.message : String(err);
  const failure = (
    reason: string,
    retry: Retry,
    stalled = false,
    waiting = false,
    text = message,
  ): Failure => ({
    reason,
    message: text,
    retry,
    stalled,
    waiting,
  });
  if (err instanceof Problem) return failure(err.reason, err.retry, err.stalled);
  if (err instanceof CredentialsNotFoundError)
    return failure("CredentialsNotFound", { after: Delay.secret }, true);
  if (err instanceof UnauthorizedError)
    return failure(
      "Unauthorized",
      { after: Delay.unauthorized },
      true,
      false,
      `the platform refused the API key (401): ${message}`,
    );
  if (err instanceof PasswordNotStoredError)
    return failure("PasswordNotStored", { after: Delay.userAction }, true);
  if (err instanceof BadRequestError)
    return failure("InvalidSpec", "onChange", true, false, `the platform refused the spec: ${message}`);
  if (err instanceof UnprocessableError)
    return failure(
      "RefusedInCurrentState",
      { backoff: true, from: Delay.refusedFrom },
      false,
      false,
      `the platform refused the change in the current state (422); retrying: ${message}`,
    );
  // The project runs other operations (another actor's, or one slower than usual): the change
  // waits for its turn, which is no failure of the resource.
  if (err instanceof ProjectBusyError)
    return failure("WaitingForProject", { after: err.retryAfterMs ?? 1_000 }, false, true);
  if (err instanceof LockedError)
    return failure(
      "WaitingForProject",
      { after: err.retryAfterMs ?? 1_000 },
      false,
      true,
      `the project has conflicting operations running; waiting for them: ${message}`,
    );
  if (err instanceof RateLimitedError)
    return failure(
      "RateLimited",
      err.retryAfterMs === undefined ? { backoff: true } : { after: err.retryAfterMs },
    );
  if (err instanceof OutcomeUnknownError)
    return failure(
      "OutcomeUnknown",
      { backoff: true },
      false,
      false,
      `the platform's answer was lost; checking what happened: ${message}`,
    );
  if (err instanceof NotFoundError) return failure("NotFound", { backoff: true });
  return failure("ReconcileError", { backoff: true });
}

/** The runtime's action for a failure: the table's retry, as the runtime's terms say it. */
export function errorAction(failure: Failure): ErrorAction {
  const { retry } = failure;
  if (retry === "onChange") return { kind: "onChange" };
  if ("after" in retry) return { kind: "retryAfter", ms: retry.after, failure: !failure.waiting };
  return retry.from === undefined ? { kind: "backoff" } : { kind: "backoff", fromMs: retry.from };
}
