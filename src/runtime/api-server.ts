// Start-up against an API server that may not answer yet. In a pod the first request can go out
// before the node's kube-proxy has put the `kubernetes` Service in place, and an API server may be
// restarting; a process that exits on that first failure is restarted by the kubelet with a
// growing back-off and counts a restart for nothing. So the start-up reads wait instead: they are
// retried with backoff while the API server gives no answer (or a 502/503/504), and every wait is
// logged with what it waits for.
import { isApiServerUnavailable } from "./kube.ts";
import { silentLogger, type Logger } from "./log.ts";
import { pause } from "./pause.ts";

export interface WaitOptions {
  log?: Logger;
  /** Gives up waiting (the process is being stopped): the pending call rejects with the abort. */
  signal?: AbortSignal;
  /** The first retry's delay; doubled after each failure up to `maxDelayMs`. */
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** Which errors mean "not yet" (default: the API server unreachable or unavailable). */
  retryable?: (err: unknown) => boolean;
}

/**
 * Runs `call` until the API server answers it: an error that says the server could not be reached
 * or could not serve for now is retried with backoff (0.5 s doubling to 10 s by default); any other
 * error, and the answer, are the caller's. `what` names the request in the log.
 */
export async function whenApiServerAnswers<T>(
  what: string,
  call: () => Promise<T>,
  options: WaitOptions = {},
): Promise<T> {
  const log = options.log ?? silentLogger;
  const maxDelayMs = options.maxDelayMs ?? 10_000;
  let delayMs = options.initialDelayMs ?? 500;
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    options.signal?.throwIfAborted();
    try {
      const answer = await call();
      if (attempt > 1) {
        log.info({ waitedMs: Date.now() - started, attempts: attempt }, `the API server answered (${what})`);
      }
      return answer;
    } catch (err) {
      if (!(options.retryable ?? isApiServerUnavailable)(err)) throw err;
      log.warn(
        { attempt, retryInMs: delayMs, reason: err instanceof Error ? err.message : String(err) },
        `waiting for the API server to answer (${what})`,
      );
    }
    await pause(delayMs, options.signal ?? new AbortController().signal);
    delayMs = Math.min(delayMs * 2, maxDelayMs);
  }
}
