// Keys that failed because the Kubernetes API server did not answer. An outage is not the object's
// fault: they wait, with no failure counted against them, until the server answers again, then go
// at once. The informers alone cannot tell it is back: a server that is shutting down refuses new
// connections for many seconds but leaves open watches open, so a probe asks it every few seconds.
import { isApiServerUnavailable } from "./kube.ts";
import type { Logger } from "./log.ts";
import { pause } from "./pause.ts";
import { backoffDelay } from "./workqueue.ts";

export class ApiServerOutage {
  private readonly waiting = new Set<string>();
  private probe: AbortController | undefined;
  private readonly ask: (signal: AbortSignal) => Promise<unknown>;
  private readonly retry: (keys: string[]) => void;
  private readonly log: Logger;

  /**
   * `ask`: a request the keys' work needs (a list of one object of the controller's kind); any
   * answer, even a refusal, means the server is back. `retry`: queue the keys again now.
   */
  constructor(ask: (signal: AbortSignal) => Promise<unknown>, retry: (keys: string[]) => void, log: Logger) {
    this.ask = ask;
    this.retry = retry;
    this.log = log;
  }

  /** `key` waits for the server; the probe starts if it is not running. */
  wait(key: string): void {
    this.waiting.add(key);
    this.startProbe();
  }

  /** `key` no longer waits (it succeeded, failed otherwise, or is gone). */
  release(key: string): void {
    this.waiting.delete(key);
  }

  /** The server answers again (the probe, or a watch reconnecting): the keys go now. */
  answered(): void {
    if (this.waiting.size === 0) return;
    this.log.info({ objects: this.waiting.size }, "API server back; retrying objects that waited for it");
    this.retry([...this.waiting]);
  }

  /** Nothing waits any more (the controller stops acting). */
  stop(): void {
    this.waiting.clear();
    this.probe?.abort();
    this.probe = undefined;
  }

  private startProbe(): void {
    if (this.probe) return;
    const probe = new AbortController();
    this.probe = probe;
    this.log.info(
      { objects: this.waiting.size },
      "the API server does not answer; waiting for it before retrying",
    );
    void (async () => {
      for (let attempt = 0; !probe.signal.aborted; attempt++) {
        await pause(backoffDelay(attempt, { baseDelayMs: 250, maxDelayMs: 5_000 }), probe.signal);
        if (probe.signal.aborted) return;
        try {
          await this.ask(probe.signal);
          break;
        } catch (err) {
          // Any answer, even a refusal, means the server is back; the keys' own errors tell more.
          if (!isApiServerUnavailable(err)) break;
        }
      }
      if (this.probe === probe) this.probe = undefined;
      if (!probe.signal.aborted) this.answered();
    })();
  }
}
