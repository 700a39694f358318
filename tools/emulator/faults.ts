// Injected faults, per route and method: error statuses, latency, connection
// resets, responses lost after the change was applied, and operations that
// fail (`failed`, retried by the platform, then `finished` or `error`). Set through the admin API or `Emulator.faults`.
import { z } from "zod";
import type { OperationFaultPlan, OperationRecord } from "./model.ts";

const probability = z.number().min(0).max(1).default(1);

export const requestFaultSchema = z
  .object({
    method: z.string().toUpperCase().optional().describe("HTTP method; all when absent"),
    route: z
      .string()
      .regex(
        /^([A-Za-z]+ )?\//,
        "a route pattern under /api/v2 (/projects/:project_id/endpoints) or the request log's form (GET /projects/:project_id/endpoints)",
      )
      .optional()
      .describe(
        "route pattern under /api/v2, e.g. /projects/:project_id/endpoints (any method), or as the request log's route shows it, e.g. GET /projects/:project_id/endpoints",
      ),
    rate: probability.describe("probability that a matching request gets the fault"),
    times: z.number().int().positive().optional().describe("stop after injecting this many times"),
    // 400 and 422: the platform refusing a request the emulator's own rules would accept (a
    // spec the platform's plan or state forbids), so operators can be tested for "terminal".
    status: z
      .union([z.literal(400), z.literal(422), z.literal(500), z.literal(503), z.literal(423), z.literal(429)])
      .optional(),
    latency_ms: z.number().min(0).max(60_000).optional().describe("real milliseconds added before answering"),
    retry_after_s: z
      .number()
      .int()
      .min(0)
      .max(3_600)
      .optional()
      .describe("with status: a Retry-After header in seconds (the platform does not always send one)"),
    reset: z.boolean().optional().describe("drop the connection before handling the request"),
    lose_response: z.boolean().optional().describe("apply the request, then drop the connection unanswered"),
  })
  // The request log's "METHOD /path" form is the same rule as `method` and a path pattern.
  .transform((rule, ctx) => {
    const match = rule.route === undefined ? null : /^([A-Za-z]+) (\/.*)$/.exec(rule.route);
    if (!match?.[1] || match[2] === undefined) return rule;
    const method = match[1].toUpperCase();
    if (rule.method !== undefined && rule.method !== method) {
      ctx.addIssue({
        code: "custom",
        path: ["method"],
        message: `${rule.method} contradicts the route's ${method}`,
      });
      return z.NEVER;
    }
    return { ...rule, method, route: match[2] };
  });

export const operationFaultSchema = z.object({
  action: z.string().optional().describe("operation action; all when absent"),
  rate: probability.describe("probability that a matching operation gets the fault"),
  times: z.number().int().positive().optional().describe("stop after this many operations"),
  failures: z
    .number()
    .int()
    .min(1)
    .max(100)
    .default(2)
    .describe("how many runs of the operation fail: its failures_count reaches this"),
  then: z
    .enum(["finished", "error"])
    .default("error")
    .describe(
      "after the last failure: the platform's retry succeeds (finished), or that failure is final (error)",
    ),
  retry_delay_ms: z
    .number()
    .int()
    .min(0)
    .max(3_600_000)
    .default(1000)
    .describe("emulated time from a failed run to the platform's retry of it (retry_at)"),
});

export const faultsSchema = z.object({
  requests: z.array(requestFaultSchema).default([]),
  operations: z.array(operationFaultSchema).default([]),
  unavailable_projects: z
    .array(z.string().regex(/^[a-z0-9-]{1,60}$/))
    .default([])
    .describe(
      "project ids GET /projects names in unavailable_project_ids instead of listing (details that did not load in time)",
    ),
});

/** Faults as a client sends them (defaults may be left out). */
export type FaultsConfig = z.input<typeof faultsSchema>;
/** Faults with every default filled in, as the emulator holds and shows them. */
export type ParsedFaults = z.infer<typeof faultsSchema>;
export type RequestFault = z.infer<typeof requestFaultSchema>;

/** What happens to one request. */
export interface FaultEffect {
  latencyMs: number;
  status?: 400 | 422 | 500 | 503 | 423 | 429;
  retryAfterS?: number;
  reset: boolean;
  loseResponse: boolean;
}

export class Faults {
  private config: ParsedFaults = { requests: [], operations: [], unavailable_projects: [] };
  /** The projects whose details do not load in time (`unavailable_project_ids`). */
  unavailableProjects: ReadonlySet<string> = new Set();
  private readonly random: () => number;

  constructor(random: () => number = Math.random) {
    this.random = random;
  }

  get current(): ParsedFaults {
    return structuredClone(this.config);
  }

  /** Replaces every fault; the input is validated like the admin API's body. */
  set(config: FaultsConfig): void {
    this.config = faultsSchema.parse(config);
    this.unavailableProjects = new Set(this.config.unavailable_projects);
  }

  clear(): void {
    this.set({});
  }

  /** Rolls each matching rule; `undefined` when none fires (the common, fast case). */
  forRequest(method: string, route: string): FaultEffect | undefined {
    let effect: FaultEffect | undefined;
    for (const rule of this.config.requests) {
      if (rule.method !== undefined && rule.method !== method) continue;
      if (rule.route !== undefined && rule.route !== route) continue;
      if (!this.fire(rule)) continue;
      effect ??= { latencyMs: 0, reset: false, loseResponse: false };
      effect.latencyMs += rule.latency_ms ?? 0;
      if (rule.status !== undefined) effect.status ??= rule.status;
      if (rule.retry_after_s !== undefined) effect.retryAfterS ??= rule.retry_after_s;
      effect.reset ||= rule.reset ?? false;
      effect.loseResponse ||= rule.lose_response ?? false;
    }
    return effect;
  }

  /** The first matching rule that fires decides how a new operation fails; `undefined`: it does not. */
  readonly operationFault = (op: OperationRecord): OperationFaultPlan | undefined => {
    const rule = this.config.operations.find(
      (rule) => (rule.action === undefined || rule.action === op.action) && this.fire(rule),
    );
    return rule && { failures: rule.failures, then: rule.then, retryDelayMs: rule.retry_delay_ms };
  };

  private fire(rule: { rate: number; times?: number | undefined }): boolean {
    if (rule.times === 0) return false;
    if (rule.rate < 1 && this.random() >= rule.rate) return false;
    if (rule.times !== undefined) rule.times--;
    return true;
  }
}
