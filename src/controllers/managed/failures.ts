// What went wrong, in words a user can act on: one mapping from errors to condition reasons for
// every kind, so the same failure reads the same on every resource. How an error is retried is
// carried by its shape (`terminal`, `retryAfterMs`), which the runtime reads.
import {
  BadRequestError,
  LockedError,
  NotFoundError,
  OutcomeUnknownError,
  ProjectBusyError,
  RateLimitedError,
  UnauthorizedError,
  UnprocessableError,
} from "../../platform/index.ts";

export interface Failure {
  reason: string;
  message: string;
  /** Not a failure of the resource: it waits for something that ends by itself (its turn in a busy project). */
  waiting?: boolean;
}

/**
 * A failure whose reason the adapter knows (a project that does not exist, a branch another
 * resource claims). Without `retryAfterMs` the runtime retries with its exponential backoff;
 * `terminal` waits for a spec change. `status` is recorded with the failure (for example the
 * operations that failed).
 */
export class Problem<Status = unknown> extends Error {
  readonly reason: string;
  readonly retryAfterMs: number | undefined;
  readonly terminal: boolean;
  /**
   * Shown as Stalled (kstatus: Failed) though still retried now and then: a project or branch
   * that does not exist will rarely appear by itself, and GitOps tools should not wait on it.
   */
  readonly stalled: boolean;
  readonly status: Partial<Status> | undefined;
  constructor(
    reason: string,
    message: string,
    options: { retryAfterMs?: number; terminal?: boolean; stalled?: boolean; status?: Partial<Status> } = {},
  ) {
    super(message);
    this.name = "Problem";
    this.reason = reason;
    this.retryAfterMs = options.retryAfterMs;
    this.terminal = options.terminal ?? false;
    this.stalled = this.terminal || (options.stalled ?? false);
    this.status = options.status;
  }
}

/** Error messages never carry key values: the platform client redacts them before they are built. */
export function describeFailure(err: unknown): Failure {
  const message = err instanceof Error ? err.message : String(err);
  const own = (err as { reason?: unknown } | null)?.reason;
  if (typeof own === "string") return { reason: own, message };
  if (err instanceof UnauthorizedError)
    return { reason: "Unauthorized", message: `the platform refused the API key (401): ${message}` };
  if (err instanceof BadRequestError)
    return { reason: "InvalidSpec", message: `the platform refused the spec: ${message}` };
  if (err instanceof UnprocessableError)
    return {
      reason: "RefusedInCurrentState",
      message: `the platform refused the change in the current state (422); retrying: ${message}`,
    };
  // The project runs other operations (another actor's, or one slower than usual): the change
  // waits for its turn, which is no failure of the resource.
  if (err instanceof ProjectBusyError) return { reason: "WaitingForProject", message, waiting: true };
  if (err instanceof LockedError)
    return {
      reason: "WaitingForProject",
      message: `the project has conflicting operations running; waiting for them: ${message}`,
      waiting: true,
    };
  if (err instanceof RateLimitedError) return { reason: "RateLimited", message };
  if (err instanceof OutcomeUnknownError)
    return {
      reason: "OutcomeUnknown",
      message: `the platform's answer was lost; checking what happened: ${message}`,
    };
  if (err instanceof NotFoundError) return { reason: "NotFound", message };
  return { reason: "ReconcileError", message };
}

/** True when retrying cannot help until the spec changes. */
export function isTerminal(err: unknown): boolean {
  return (err as { terminal?: unknown } | null)?.terminal === true;
}

/** True when the resource should read as stuck (Stalled): terminal, or unlikely to change by itself. */
export function isStalled(err: unknown): boolean {
  return isTerminal(err) || (err instanceof Problem && err.stalled);
}
