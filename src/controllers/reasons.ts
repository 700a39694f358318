// Condition reasons a user can act on, derived from what went wrong. Shared by
// every kind so the same failure reads the same on every resource.
import {
  BadRequestError,
  LockedError,
  NotFoundError,
  OutcomeUnknownError,
  ProjectBusyError,
  RateLimitedError,
  UnauthorizedError,
  UnprocessableError,
} from "../platform/index.ts";
import { CredentialsNotFoundError } from "./credentials.ts";

export interface Failure {
  reason: string;
  message: string;
  /** Not a failure of the resource: it waits for something that will end by itself. */
  waiting?: boolean;
}

/** Error messages never carry key values: the platform client redacts them before they are built. */
export function describeFailure(err: unknown): Failure {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof CredentialsNotFoundError) return { reason: "CredentialsNotFound", message };
  if (err instanceof UnauthorizedError)
    return { reason: "Unauthorized", message: `the platform refused the API key (401): ${message}` };
  if (err instanceof BadRequestError || err instanceof UnprocessableError)
    return { reason: "InvalidSpec", message: `the platform refused the spec: ${message}` };
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
