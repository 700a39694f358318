/**
 * One logical call to a platform route: budget, send, classify, retry, validate, observe.
 *
 * Retry rules (why: a duplicated create costs money and a lost key value is gone for good):
 * - reads are retried with jittered backoff on network failures, 423, 429 and 5xx;
 * - a mutation is retried only when the platform certainly did not apply it: the connection was
 *   never made, or it answered 423, 429 or 503 (rejected before processing);
 * - a mutation whose answer was lost (reset after sending, timeout, 500/502/504) is never sent
 *   again: it fails with OutcomeUnknownError and the caller resolves it by observing;
 * - the client never sleeps long: when the next attempt would be further away than
 *   `maxInlineWaitMs`, or attempts run out, the error carries `retryAfterMs` for a requeue.
 */
import { randomUUID } from "node:crypto";
import { setTimeout } from "node:timers/promises";
import type { Logger } from "pino";
import type { z } from "zod";
import type { RateBudget, RequestKind } from "./budget.ts";
import {
  errorClassForStatus,
  NetworkError,
  OutcomeUnknownError,
  type PlatformError,
  redactSecret,
  ResponseValidationError,
} from "./errors.ts";
import type { PlatformMetrics } from "./metrics.ts";
import { errorBodyWire } from "./schemas.ts";
import { failureCode, type Transport, type TransportRequest } from "./transport.ts";

export interface RetryOptions {
  /** Attempts for a read, including the first. Default 4. */
  readAttempts?: number;
  /** Attempts for a mutation that certainly was not applied, including the first. Default 3. */
  mutationAttempts?: number;
  /** First backoff step. Default 200 ms. */
  baseDelayMs?: number;
  /** Largest backoff step. Default 2 s. */
  maxDelayMs?: number;
  /** Longest pause taken inside one call; beyond it the error is handed back. Default 2 s. */
  maxInlineWaitMs?: number;
  /** Suggested wait after 423 without Retry-After (the official CLI waits 3 s). Default 3 s. */
  lockedRetryAfterMs?: number;
}

export interface RouteCall<T> {
  method: TransportRequest["method"];
  /** Route template, e.g. "/projects/{project_id}/endpoints". */
  template: string;
  path: string;
  query?: TransportRequest["query"];
  body?: unknown;
  /** Expected response shape; `undefined` accepts an empty body. */
  schema: z.ZodType<T>;
  signal?: AbortSignal | undefined;
}

export interface ExchangeOptions {
  transport: Transport;
  /** The budget of the key's account (read per call: a key found to share an account joins its budget). */
  budget: () => RateBudget;
  logger: Logger;
  metrics: PlatformMetrics;
  apiKey: string;
  retry?: RetryOptions;
}

/** Seconds or an HTTP date, as RFC 9110 allows. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return undefined;
  const seconds = Number(text);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

export class Exchange {
  private readonly transport: Transport;
  private readonly budget: () => RateBudget;
  private readonly logger: Logger;
  private readonly metrics: PlatformMetrics;
  private readonly apiKey: string;
  private readonly retry: Required<RetryOptions>;

  constructor(options: ExchangeOptions) {
    this.transport = options.transport;
    this.budget = options.budget;
    this.logger = options.logger;
    this.metrics = options.metrics;
    this.apiKey = options.apiKey;
    this.retry = {
      readAttempts: options.retry?.readAttempts ?? 4,
      mutationAttempts: options.retry?.mutationAttempts ?? 3,
      baseDelayMs: options.retry?.baseDelayMs ?? 200,
      maxDelayMs: options.retry?.maxDelayMs ?? 2_000,
      maxInlineWaitMs: options.retry?.maxInlineWaitMs ?? 2_000,
      lockedRetryAfterMs: options.retry?.lockedRetryAfterMs ?? 3_000,
    };
  }

  /** Equal jitter: half the exponential step plus a random share of the other half. */
  private backoff(attempt: number): number {
    const step = Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** (attempt - 1));
    return step / 2 + Math.random() * (step / 2);
  }

  async run<T>(call: RouteCall<T>): Promise<T> {
    const kind: RequestKind = call.method === "GET" ? "read" : "mutation";
    const route = `${call.method} ${call.template}`;
    const attempts = kind === "read" ? this.retry.readAttempts : this.retry.mutationAttempts;
    for (let attempt = 1; ; attempt++) {
      const waited = await this.budget().acquire(call.template, kind, call.signal);
      this.metrics.budgetWait(waited, call.template);
      const requestId = randomUUID();
      const started = performance.now();
      const result = await this.transport.send({
        method: call.method,
        path: call.path,
        query: call.query,
        body: call.body,
        requestId,
        signal: call.signal,
      });
      const durationMs = performance.now() - started;
      const status = result.kind === "response" ? result.status : 0;
      this.metrics.request({ route: call.template, method: call.method, status, durationMs });
      const log = {
        route,
        requestId,
        status,
        durationMs: Math.round(durationMs),
        attempt,
        budgetWaitMs: waited,
      };

      if (result.kind === "response" && result.status < 300) {
        this.logger.debug(log, "platform request");
        return this.validate(call, route, requestId, result.status, result.text);
      }

      let makeError: (retryAfterMs: number | undefined) => PlatformError;
      let mayRetry: boolean;
      let suggestedMs: number | undefined;
      if (result.kind === "failure") {
        if (call.signal?.aborted && (kind === "read" || result.notSent)) throw call.signal.reason;
        const code = failureCode(result.error);
        const reason = redactSecret(
          result.error instanceof Error ? result.error.message : String(result.error),
          this.apiKey,
        );
        if (kind === "mutation" && !result.notSent) {
          this.logger.warn({ ...log, code }, "platform mutation lost its response; outcome unknown");
          throw new OutcomeUnknownError(
            `${route}: the request was sent but its response was lost (${code}: ${reason}); ` +
              "the change may or may not have been applied, observe before acting again",
            { route, requestId, code, retryAfterMs: this.backoff(attempt), cause: result.error },
          );
        }
        mayRetry = true;
        makeError = (retryAfterMs) =>
          new NetworkError(`${route}: no response from the platform (${code}: ${reason})`, {
            route,
            requestId,
            code,
            retryAfterMs,
            cause: result.error,
          });
      } else {
        const status = result.status;
        const parsed = this.parseErrorBody(result.text);
        const code = parsed.code ?? "";
        const platformRequestId = parsed.request_id ?? requestId;
        const message = redactSecret(parsed.message ?? result.text.slice(0, 300), this.apiKey);
        const retryAfterMs = parseRetryAfter(result.headers["retry-after"]);
        if (status === 429) this.budget().pause(retryAfterMs ?? this.retry.maxDelayMs);
        suggestedMs = retryAfterMs ?? (status === 423 ? this.retry.lockedRetryAfterMs : undefined);
        const certainlyNotApplied = status === 423 || status === 429 || status === 503;
        if (kind === "mutation" && status >= 500 && !certainlyNotApplied) {
          this.logger.warn(log, "platform mutation answered with a server error; outcome unknown");
          throw new OutcomeUnknownError(
            `${route}: the platform answered ${status} (${message}); ` +
              "the change may or may not have been applied, observe before acting again",
            { route, requestId: platformRequestId, status, code, retryAfterMs: this.backoff(attempt) },
          );
        }
        mayRetry = certainlyNotApplied || (kind === "read" && status >= 500);
        const ErrorClass = errorClassForStatus(status);
        makeError = (retryAfterMs) =>
          new ErrorClass(`${route} answered ${status}: ${message}`, {
            route,
            status,
            code,
            requestId: platformRequestId,
            retryAfterMs,
          });
      }

      const delay = suggestedMs ?? this.backoff(attempt);
      if (!mayRetry || attempt >= attempts || delay > this.retry.maxInlineWaitMs) {
        // Hand the wait to the caller (a requeue) instead of sleeping on it here.
        const error = makeError(mayRetry ? delay : undefined);
        this.logger.debug({ ...log, err: error.message }, "platform request failed");
        throw error;
      }
      this.logger.info({ ...log, retryInMs: Math.round(delay) }, "platform request will be retried");
      await setTimeout(delay, undefined, { signal: call.signal });
    }
  }

  private parseErrorBody(text: string): z.output<typeof errorBodyWire> {
    try {
      const parsed = errorBodyWire.safeParse(JSON.parse(text));
      return parsed.success ? parsed.data : {};
    } catch {
      return {};
    }
  }

  private validate<T>(call: RouteCall<T>, route: string, requestId: string, status: number, text: string): T {
    let json: unknown;
    try {
      json = text === "" ? undefined : JSON.parse(text);
    } catch {
      throw new ResponseValidationError(`${route}: the response body is not JSON`, {
        route,
        requestId,
        status,
        code: "invalid_json",
      });
    }
    const parsed = call.schema.safeParse(json);
    if (parsed.success) return parsed.data;
    const problems = parsed.error.issues
      .slice(0, 3)
      .map((issue) => `field "${issue.path.join(".") || "(body)"}": ${issue.message}`)
      .join("; ");
    throw new ResponseValidationError(
      redactSecret(`${route}: the response does not fit the contract: ${problems}`, this.apiKey),
      { route, requestId, status, code: "invalid_response" },
    );
  }
}
