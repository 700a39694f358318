/**
 * Test harness: the emulator over real HTTP, its admin API, captured client logs, and clients
 * wired to it with test-sized retries and budgets.
 */
import { Writable } from "node:stream";
import pino from "pino";
import type { z } from "zod";
import {
  startEmulator,
  type Emulator,
  type EmulatorOptions,
  type faultsSchema,
} from "../../../tools/emulator/index.ts";
import { RateBudget } from "../../../src/platform/budget.ts";
import { PlatformClient, type PlatformClientOptions } from "../../../src/platform/client.ts";
import { ProjectBusyError } from "../../../src/platform/errors.ts";

export interface Counters {
  total: number;
  rate_limited: number;
  by_route: Record<string, Record<string, number> | undefined>;
}

export interface TestPlatform {
  emulator: Emulator;
  /** Every log line the clients of this platform wrote, raw JSON text. */
  logLines: string[];
  client(options?: Partial<PlatformClientOptions>): PlatformClient;
  /** Replaces the emulator's faults through its admin API (PUT /emulator/faults). */
  setFaults(faults: z.input<typeof faultsSchema>): Promise<void>;
  counters(): Promise<Counters>;
  /** The emulator's latest request log entries (method, route, status, request_id), oldest first. */
  requests(limit?: number): Promise<{ method: string; route: string; status: number; request_id: string }[]>;
  /** Requests the emulator served on a route such as "POST /projects/:project_id/endpoints". */
  served(route: string): Promise<number>;
  close(): Promise<void>;
}

/** A budget too large to matter, for tests that are not about the budget. */
/** Limits far beyond what a test sends: the budget never holds a request back. */
export const generousLimits = {
  perMinute: 1_000_000,
  burstPerSecondPerRoute: 100_000,
  accountBurst: 100_000,
};

export const generousBudget = (): RateBudget => new RateBudget(generousLimits);

/** As a controller does with a resource's change: held back by the project's gate, it comes back when told. */
export async function asAController<T>(change: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await change();
    } catch (err) {
      if (!(err instanceof ProjectBusyError)) throw err;
      await new Promise((resolve) => setTimeout(resolve, err.retryAfterMs));
    }
  }
}

/** Retries sized for tests: the same rules, milliseconds instead of seconds. */
export const fastRetry = { baseDelayMs: 5, maxDelayMs: 40, maxInlineWaitMs: 100, lockedRetryAfterMs: 20 };

export async function startPlatform(options: EmulatorOptions = {}): Promise<TestPlatform> {
  const emulator = await startEmulator({ rateLimits: false, ...options });
  const logLines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
      done();
    },
  });
  const logger = pino({ level: "trace" }, sink);
  const clients: PlatformClient[] = [];
  const admin = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const response = await fetch(`${emulator.adminUrl}${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok)
      throw new Error(`emulator admin ${method} ${path}: ${response.status} ${await response.text()}`);
    return response.json();
  };
  const counters = async () => (await admin("GET", "/counters")) as Counters;
  return {
    emulator,
    logLines,
    client(overrides = {}) {
      const client = new PlatformClient({
        baseUrl: emulator.url,
        apiKey: emulator.bootstrapKey,
        budget: generousBudget(),
        logger,
        retry: fastRetry,
        ...overrides,
      });
      clients.push(client);
      return client;
    },
    async setFaults(faults) {
      await admin("PUT", "/faults", faults);
    },
    counters,
    async requests(limit = 100) {
      const { requests } = (await admin("GET", `/requests?limit=${limit}`)) as {
        requests: { method: string; route: string; status: number; request_id: string }[];
      };
      return requests;
    },
    async served(route) {
      const byStatus = (await counters()).by_route[route] ?? {};
      return Object.values(byStatus).reduce((sum, n) => sum + n, 0);
    },
    async close() {
      await Promise.all(clients.map((c) => c.close()));
      await emulator.close();
    },
  };
}
