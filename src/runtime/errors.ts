// How a thrown error steers retries. Errors are classified by shape, so the
// platform client's errors (with `terminal`, `retryAfterMs`) need no wrapping.
import { isApiServerUnavailable } from "./kube.ts";

/** The spec must change before retrying helps: no retry until `metadata.generation` changes. */
export class TerminalError extends Error {
  readonly terminal = true;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "TerminalError";
  }
}

/** Retry after a known time (e.g. a platform Retry-After, or an operation still running). */
export class RetryAfterError extends Error {
  readonly retryAfterMs: number;
  constructor(message: string, retryAfterMs: number, options?: ErrorOptions) {
    super(message, options);
    this.name = "RetryAfterError";
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * - terminal: wait for a spec change;
 * - retryAfter: retry after a known time;
 * - apiServerUnavailable: the Kubernetes API server did not answer (restarting, path down): retry
 *   on a short leash, and as soon as a watch reconnects; not the object's fault, so it does not
 *   grow the object's own backoff;
 * - backoff: per-object exponential backoff.
 */
export type ErrorPolicy =
  | { kind: "terminal" }
  | { kind: "retryAfter"; ms: number }
  | { kind: "apiServerUnavailable" }
  | { kind: "backoff" };

export function classifyError(err: unknown): ErrorPolicy {
  if (typeof err === "object" && err !== null) {
    const e = err as { terminal?: unknown; retryAfterMs?: unknown };
    if (e.terminal === true) return { kind: "terminal" };
    if (typeof e.retryAfterMs === "number" && Number.isFinite(e.retryAfterMs)) {
      return { kind: "retryAfter", ms: Math.max(0, e.retryAfterMs) };
    }
    if (isApiServerUnavailable(err)) return { kind: "apiServerUnavailable" };
  }
  return { kind: "backoff" };
}

/** A message safe for logs and events: the error's own message, never its cause chain or payload. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
