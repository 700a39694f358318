/**
 * Errors of the platform client. They state facts only: what the platform answered (the HTTP
 * status, its code and message, a retry hint), or that no answer came. What a fact means for a
 * resource is decided once, by the controllers (src/controllers/refusals.ts). None of them ever
 * holds the API key: messages come from the platform or from this client, and are passed through
 * `redactSecret` before they are stored.
 */

export interface PlatformErrorDetails {
  /** HTTP status, or undefined when no response arrived. */
  status?: number | undefined;
  /** The platform's error code (often empty), or a client code such as "network_error". */
  code?: string | undefined;
  /** The request id sent as X-Request-ID (and echoed by the platform as request_id). */
  requestId?: string | undefined;
  /** Route template with method, e.g. "POST /projects/{project_id}/endpoints". */
  route: string;
  retryAfterMs?: number | undefined;
  cause?: unknown;
}

export class PlatformError extends Error {
  readonly status: number | undefined;
  readonly code: string;
  readonly requestId: string | undefined;
  readonly route: string;
  /** When to try again, if the platform or the rate budget said so. */
  readonly retryAfterMs: number | undefined;

  constructor(message: string, details: PlatformErrorDetails) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.status = details.status;
    this.code = details.code ?? "";
    this.requestId = details.requestId;
    this.route = details.route;
    this.retryAfterMs = details.retryAfterMs;
  }
}

/** 400: the request is malformed for the platform. */
export class BadRequestError extends PlatformError {}

/** 401: the key is missing, invalid or revoked. Retrying with the same key cannot help. */
export class UnauthorizedError extends PlatformError {}

/** 403: the key may not act on this object. */
export class ForbiddenError extends PlatformError {}

/** 404: the object (or route) does not exist. */
export class NotFoundError extends PlatformError {}

/** 409: a conflict with existing state, e.g. the branch already has a read-write endpoint. */
export class ConflictError extends PlatformError {}

/**
 * 422: the current state forbids the request. Usually for a while only ("branch not ready yet"
 * right after a branch is created), so it is retried with backoff rather than taken as a verdict
 * on the spec; a spec the platform cannot accept at all is a 400.
 */
export class UnprocessableError extends PlatformError {}

/** 423: the project has conflicting operations running; safe to retry later. */
export class LockedError extends PlatformError {}

/**
 * The project has operations running, so the client held a mutation back instead of sending it
 * into a 423 (gate.ts). Not a failure of the change: retry after `retryAfterMs`, when they are
 * expected to have finished. `cause` is the 423 when the platform itself answered so.
 */
export class ProjectBusyError extends PlatformError {
  /** The project whose operations are running. */
  readonly projectId: string;
  constructor(message: string, details: PlatformErrorDetails & { projectId: string }) {
    super(message, details);
    this.projectId = details.projectId;
  }
}

/** 429: the account's rate limit was hit (or the client's own budget could not grant in time). */
export class RateLimitedError extends PlatformError {}

/** 5xx. A 5xx answer to a mutation other than 503 is reported as OutcomeUnknownError instead. */
export class ServerError extends PlatformError {}

/** No HTTP response: connection refused, reset, timeout, DNS failure. */
export class NetworkError extends PlatformError {}

/** The platform answered with a body that does not fit the contract. */
export class ResponseValidationError extends PlatformError {}

/**
 * A mutation was sent but its response was lost (reset after sending, timeout, 500/502/504).
 * The platform may or may not have applied it. It is never re-sent by the client: the caller
 * resolves it by observing (listing endpoints, keys, operations) before acting again.
 */
export class OutcomeUnknownError extends PlatformError {}

/** Replaces every occurrence of the secret in a text; used on every message an error stores. */
export function redactSecret(text: string, secret: string | undefined): string {
  if (!secret) return text;
  return text.split(secret).join("[REDACTED]");
}

/** Picks the error class for an HTTP status. */
export function errorClassForStatus(
  status: number,
): new (message: string, details: PlatformErrorDetails) => PlatformError {
  switch (status) {
    case 400:
      return BadRequestError;
    case 401:
      return UnauthorizedError;
    case 403:
      return ForbiddenError;
    case 404:
      return NotFoundError;
    case 409:
      return ConflictError;
    case 422:
      return UnprocessableError;
    case 423:
      return LockedError;
    case 429:
      return RateLimitedError;
    default:
      return status >= 500 ? ServerError : PlatformError;
  }
}

/**
 * 412 to `reveal_password`: the project does not store its roles' passwords, so the only way to
 * a password is a reset (which drops the role's live connections).
 */
export class PasswordNotStoredError extends PlatformError {}

/**
 * A refusal that may be the key's own, not the request's: an answer to one key of an account that
 * another key, reading the same project or list, must not take as its own but ask again with its
 * own key. 401 and 403, and 404: a key scoped to one project is refused with 404 everywhere else
 * (the organization's other projects, the account's key list), while the organization's other
 * keys, which share its account, see them.
 */
export function keyRefused(err: unknown): boolean {
  return err instanceof UnauthorizedError || err instanceof ForbiddenError || err instanceof NotFoundError;
}

/** A change the platform certainly did not apply: held back, 423, 429. */
export function notApplied(err: unknown): boolean {
  return err instanceof ProjectBusyError || err instanceof LockedError || err instanceof RateLimitedError;
}
