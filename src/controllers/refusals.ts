// What an answer of the platform means for a resource, decided once: each error of the platform
// client (which states facts only: the HTTP status, the platform's code, a retry hint) is read as
// a refusal of one kind, whose outcome the layer's one table decides (managed/refusal.ts). A kind
// that has words of its own for an answer (a 409 on an endpoint's create is
// BranchHasReadWriteEndpoint) catches it in its verb; everything else comes here.
import {
  BadRequestError,
  ForbiddenError,
  LockedError,
  NotFoundError,
  OutcomeUnknownError,
  PasswordNotStoredError,
  PlatformError,
  ProjectBusyError,
  RateLimitedError,
  UnauthorizedError,
  UnprocessableError,
} from "../platform/index.ts";
import { Refusal, type RefusalKind } from "./managed/refusal.ts";

type ErrorClass = abstract new (...args: never[]) => PlatformError;

/** One row: an error of the platform client, the reason a user reads, its kind, and the words. */
export interface PlatformRefusalRow {
  error: ErrorClass;
  /** What the platform answered, for the generated table. */
  answer: string;
  reason: string;
  kind: RefusalKind;
  /** The message, from the platform's (which never carries a key). */
  message?(err: PlatformError): string;
}

/** The rows, most specific first (a subclass before its parent). */
export const platformRefusals: readonly PlatformRefusalRow[] = [
  {
    error: UnauthorizedError,
    answer: "401",
    reason: "Unauthorized",
    kind: "credentials",
    message: (e) => `the platform refused the API key (401): ${e.message}`,
  },
  {
    error: ForbiddenError,
    answer: "403",
    reason: "Forbidden",
    kind: "outside",
    message: (e) => `the platform refused this key access (403): ${e.message}`,
  },
  {
    error: PasswordNotStoredError,
    answer: "412 to a password read",
    reason: "PasswordNotStored",
    kind: "outside",
  },
  {
    error: BadRequestError,
    answer: "400",
    reason: "InvalidSpec",
    kind: "spec",
    message: (e) => `the platform refused the spec: ${e.message}`,
  },
  {
    error: UnprocessableError,
    answer: "422",
    reason: "RefusedInCurrentState",
    kind: "transient",
    message: (e) => `the platform refused the change in the current state (422); retrying: ${e.message}`,
  },
  // The project runs other operations (another actor's, or one slower than usual): the change waits
  // for its turn, which is no failure of the resource.
  {
    error: ProjectBusyError,
    answer: "held back: the project is busy",
    reason: "WaitingForProject",
    kind: "turn",
  },
  {
    error: LockedError,
    answer: "423",
    reason: "WaitingForProject",
    kind: "turn",
    message: (e) => `the project has conflicting operations running; waiting for them: ${e.message}`,
  },
  { error: RateLimitedError, answer: "429", reason: "RateLimited", kind: "transient" },
  {
    error: OutcomeUnknownError,
    answer: "no answer to a change",
    reason: "OutcomeUnknown",
    kind: "transient",
    message: (e) => `the platform's answer was lost; checking what happened: ${e.message}`,
  },
  {
    error: NotFoundError,
    answer: "404",
    reason: "NotFound",
    kind: "outside",
  },
];

/** A refusal for an error of the platform client; undefined for anything else. */
export function platformRefusal(err: unknown): Refusal | undefined {
  if (!(err instanceof PlatformError)) return undefined;
  const row = platformRefusals.find((r) => err instanceof r.error);
  if (!row) return undefined;
  return new Refusal(row.reason, row.kind, row.message?.(err) ?? err.message, {
    retryAfterMs: err.retryAfterMs,
    cause: err,
  });
}
