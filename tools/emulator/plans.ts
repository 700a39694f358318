// What an account's plan allows, where the platform refuses a request beyond it: the number of
// projects, the history retention, the compute size, read replicas. Each account has its limits
// (the seed's `limits`, or `PUT /emulator/accounts/{id}/limits`); a preset names the plan and
// fills what is not given. The presets are approximations of the platform's plans: a test that
// depends on a figure sets it.
import { z } from "zod";
import { isComputeSize } from "./compute-units.ts";
import { PlatformError, badRequest } from "./errors.ts";
import type { AccountRecord, PlanLimits } from "./model.ts";
import type { World } from "./world.ts";

type Plan = PlanLimits["plan"];

/**
 * The free plan's compute is fixed at 0.25 CU and read replicas are a paid feature
 * (platform-api.md, "Limits" and rule 3); public reports show a free-tier retention refusal
 * naming `max:"21600"`. The project counts are guesses.
 */
export const planPresets: Record<Plan, PlanLimits> = {
  free: {
    plan: "free",
    maxProjects: 100,
    maxHistoryRetentionSeconds: 21_600,
    maxComputeUnits: 0.25,
    readReplicas: false,
  },
  launch: {
    plan: "launch",
    maxProjects: 100,
    maxHistoryRetentionSeconds: 604_800,
    maxComputeUnits: 16,
    readReplicas: true,
  },
  scale: {
    plan: "scale",
    maxProjects: 1000,
    maxHistoryRetentionSeconds: 2_592_000,
    maxComputeUnits: 56,
    readReplicas: true,
  },
  business: {
    plan: "business",
    maxProjects: 5000,
    maxHistoryRetentionSeconds: 2_592_000,
    maxComputeUnits: 56,
    readReplicas: true,
  },
};

/** Without limits of its own, an account has the scale plan's: generous enough for any test. */
export const defaultPlan: Plan = "scale";

/**
 * The seed's and the admin API's form: a plan, and any of its figures overridden. Kept in this
 * form in a parsed seed (parsing it again gives the same), turned into `PlanLimits` by `toPlanLimits`.
 */
export const limitsSchema = z.object({
  plan: z.enum(["free", "launch", "scale", "business"]).default(defaultPlan),
  max_projects: z.number().int().min(0).optional().describe("live projects the account may have"),
  max_history_retention_seconds: z
    .number()
    .int()
    .min(0)
    .max(2_592_000)
    .optional()
    .describe("the largest history_retention_seconds"),
  max_compute_units: z
    .number()
    .refine(isComputeSize, "must be a compute size (0.25, 0.5, 1..16, even sizes 18..56)")
    .optional()
    .describe("the largest compute size of an endpoint (0.25: fixed 0.25 CU only)"),
  read_replicas: z.boolean().optional().describe("whether read-only endpoints may be created"),
});
export type LimitsSeed = z.infer<typeof limitsSchema>;

export function toPlanLimits(given: LimitsSeed): PlanLimits {
  const preset = planPresets[given.plan];
  return {
    plan: given.plan,
    maxProjects: given.max_projects ?? preset.maxProjects,
    maxHistoryRetentionSeconds: given.max_history_retention_seconds ?? preset.maxHistoryRetentionSeconds,
    maxComputeUnits: given.max_compute_units ?? preset.maxComputeUnits,
    readReplicas: given.read_replicas ?? preset.readReplicas,
  };
}

/** The limits in the seed's form, as the admin API shows them. */
export function limitsView(limits: PlanLimits): Record<string, unknown> {
  return {
    plan: limits.plan,
    max_projects: limits.maxProjects,
    max_history_retention_seconds: limits.maxHistoryRetentionSeconds,
    max_compute_units: limits.maxComputeUnits,
    read_replicas: limits.readReplicas,
  };
}

export function limitsOf(account: AccountRecord): PlanLimits {
  return account.limits ?? planPresets[defaultPlan];
}

/** The limits of the account that owns a project. */
export function projectLimits(world: World, projectId: string): PlanLimits {
  const project = world.projects.get(projectId);
  return project === undefined ? planPresets[defaultPlan] : limitsOf(world.account(project.ownerId));
}

/** A new project's retention when none is asked: one day (the document's default), within the plan. */
export function defaultHistoryRetention(limits: PlanLimits): number {
  return Math.min(86_400, limits.maxHistoryRetentionSeconds);
}

/** The platform's own refusal, as public reports quote it (HTTP 400, empty code). */
export function checkHistoryRetention(limits: PlanLimits, seconds: number): void {
  if (seconds <= limits.maxHistoryRetentionSeconds) return;
  throw badRequest(
    `requested history retention seconds exceeds allowed maximum; requested_history_retention_seconds:"${seconds}", max:"${limits.maxHistoryRetentionSeconds}"`,
  );
}

/**
 * One more live project for the account, refused beyond its plan's count as the platform does
 * (`{"code":"PROJECTS_LIMIT_EXCEEDED","message":"user projects limit of 1 exceeded, got 1"}`).
 */
export function checkProjectCount(world: World, account: AccountRecord): void {
  const { maxProjects } = limitsOf(account);
  let count = 0;
  for (const project of world.projects.values()) if (project.ownerId === account.id) count++;
  if (count < maxProjects) return;
  const who = account.kind === "user" ? "user" : "organization";
  throw new PlatformError(
    422,
    `${who} projects limit of ${maxProjects} exceeded, got ${count}`,
    "PROJECTS_LIMIT_EXCEEDED",
  );
}

/**
 * A compute size or range within the plan (after `checkComputeRange`, so min <= max). The
 * platform's wording is not public; the refusal names the field and the plan's limit.
 */
export function checkPlanCompute(limits: PlanLimits, min: number, max: number, prefix = ""): void {
  if (max <= limits.maxComputeUnits) return;
  const field = `${prefix}autoscaling_limit_${min > limits.maxComputeUnits ? "min" : "max"}_cu`;
  const allowed =
    limits.maxComputeUnits === 0.25 ? "a fixed size of 0.25 CU" : `at most ${limits.maxComputeUnits} CU`;
  throw badRequest(`${field}: the ${limits.plan} plan allows ${allowed}, got ${max}`);
}

/** Read replicas are a paid-plan feature (platform-api.md, compute endpoints rule 3). */
export function checkEndpointType(limits: PlanLimits, type: "read_write" | "read_only"): void {
  if (type === "read_only" && !limits.readReplicas) {
    throw new PlatformError(422, `read replicas are not available on the ${limits.plan} plan`);
  }
}

/** The `subscription_type` a project's owner shows (`BillingSubscriptionType`). */
export function subscriptionType(plan: Plan): string {
  return plan === "business" ? "business" : `${plan}_v3`;
}
