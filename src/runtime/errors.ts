// How a failed reconcile is retried. A reconciler gives its own `errorPolicy` (kube-rs's
// `error_policy(object, error) -> Action`); without one, a `TerminalError` waits for a change and
// anything else backs off. Either way the runtime itself decides only one thing: a Kubernetes API
// server that does not answer is waited for, not counted against the object.
import { isApiServerUnavailable } from "./kube.ts";

/** The spec must change before retrying helps: no retry until `metadata.generation` changes. */
export class TerminalError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "TerminalError";
  }
}

/**
 * What to do after a failed reconcile:
 * - onChange: wait for a spec change (or a change of something the object watches, or a resync);
 * - retryAfter: try again after `ms`; `failure: false` is a wait, not a failure (no Warning event);
 * - backoff: per-object exponential backoff, doubling from `fromMs` (the queue's own start otherwise)
 *   up to `maxMs` (the queue's own bound otherwise).
 */
export type ErrorAction =
  | { kind: "onChange" }
  | { kind: "retryAfter"; ms: number; failure: boolean }
  | { kind: "backoff"; fromMs?: number | undefined; maxMs?: number | undefined };

/** The runtime's retries: a reconciler's action, or waiting out the API server. */
export type ErrorPolicy = ErrorAction | { kind: "apiServerUnavailable" };

/** The default policy, for a reconciler without its own. */
export function classifyError(err: unknown): ErrorAction {
  return err instanceof TerminalError ? { kind: "onChange" } : { kind: "backoff" };
}

/** The API server not answering comes first: not the object's fault, whatever the reconciler says. */
export function retryPolicy(err: unknown, policy: (err: unknown) => ErrorAction): ErrorPolicy {
  if (isApiServerUnavailable(err)) return { kind: "apiServerUnavailable" };
  return policy(err);
}

/** A message safe for logs and events: the error's own message, never its cause chain or payload. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
