// Condition reasons a user can act on, derived from what went wrong. Shared by
// every kind so the same failure reads the same on every resource.
import {
  BadRequestError,
  LockedError,
  NotFoundError,
  OutcomeUnknownError,
  RateLimitedError,
  UnauthorizedError,
  UnprocessableError,
} from "../platform/index.ts";
import { CredentialsNotFoundError } from "./credentials.ts";

export interface Failure {
  reason: string;
  message: string;
}

/** Error messages never carry key values: the platform client redacts them before they are built. */
export function describeFailure(err: unknown): Failure {
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof CredentialsNotFoundError) return { reason: "CredentialsNotFound", message };
  if (err instanceof UnauthorizedError)
    return { reason: "Unauthorized", message: `the platform refused the API key (401): ${message}` };
  if (err instanceof BadRequestError || err instanceof UnprocessableError)
    return { reason: "InvalidSpec", message: `the platform refused the spec: ${message}` };
  if (err instanceof LockedError)
    return { reason: "Locked", message: `the project has conflicting operations running: ${message}` };
  if (err instanceof RateLimitedError) return { reason: "RateLimited", message };
  if (err instanceof OutcomeUnknownError)
    return {
      reason: "OutcomeUnknown",
      message: `the platform's answer was lost; checking what happened: ${message}`,
    };
  if (err instanceof NotFoundError) return { reason: "NotFound", message };
  return { reason: "ReconcileError", message };
}
