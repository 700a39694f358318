// The seed file: the account, its bootstrap key, and the projects with their
// branches that the emulated world starts with. YAML or JSON.
import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { defaultDatabaseName, defaultRoleName } from "./catalog.ts";
import { limitsSchema } from "./plans.ts";
import { defaultRegionId } from "./regions.ts";
import { defaultEndpointSettingsBody, projectSettingsBody } from "./requests.ts";

const id = z.string().regex(/^[a-z0-9-]{1,60}$/);

const branchSeed = z.object({
  id: id.optional(),
  name: z.string().min(1),
  parent: z.string().optional().describe("name or id of the parent branch (default: the primary branch)"),
  annotation_value: z
    .record(z.string(), z.string())
    .optional()
    .describe("the annotation given at its creation, as a create-branch body's annotation_value"),
});

const projectSeed = z.object({
  id: id.optional(),
  name: z.string().min(1),
  region_id: z.string().default(defaultRegionId),
  pg_version: z.number().int().min(14).max(18).default(17),
  org_id: id.optional(),
  provisioner: z.string().default("k8s-neonvm"),
  primary_branch: z.string().default("main").describe("name of the primary branch"),
  role_name: z
    .string()
    .min(1)
    .max(63)
    .default(defaultRoleName)
    .describe("the primary branch's owner role, as a project create's branch.role_name"),
  database_name: z
    .string()
    .min(1)
    .max(63)
    .default(defaultDatabaseName)
    .describe("the primary branch's database, owned by role_name"),
  store_passwords: z
    .boolean()
    .default(true)
    .describe("whether the platform keeps role passwords (reveal_password answers 412 when not)"),
  history_retention_seconds: z
    .number()
    .int()
    .min(0)
    .max(2_592_000)
    .optional()
    .describe("default: one day, within the account's plan"),
  settings: projectSettingsBody.optional().describe("the project's settings, as a project create's"),
  default_endpoint_settings: defaultEndpointSettingsBody
    .optional()
    .describe("what new endpoints start with (default: 1 CU fixed, or the plan's largest size below it)"),
  branches: z.array(branchSeed).default([]).describe("child branches, without endpoints"),
  sql: z
    .string()
    .min(1)
    .optional()
    .describe(
      "SQL run once, as the owner role, in the primary branch's database when the world is seeded (with the emulator's Postgres): the production data a demo starts with",
    ),
});

const accountInfo = z
  .object({
    kind: z
      .enum(["user", "organization"])
      .default("user")
      .describe("a user's keys are api_key_user, an organization's api_key_org"),
    id: z
      .string()
      .optional()
      .describe("a UUID for a user, an id like org-acme-12345678 for an organization; generated when absent"),
    name: z.string().default("Emulated User"),
    image: z.string().default(""),
    email: z.email().default("user@example.com"),
    organizations: z
      .array(
        z.object({
          id,
          name: z.string().min(1),
          role: z
            .enum(["admin", "member"])
            .optional()
            .describe("the user's role, when the organization is an account of the seed (default admin)"),
        }),
      )
      .optional()
      .describe("a user's organizations besides those its projects name (org_id)"),
  })
  .superRefine((account, ctx) => {
    if (account.id === undefined) return;
    const valid =
      account.kind === "user" ? z.uuid().safeParse(account.id).success : /^[a-z0-9-]{1,60}$/.test(account.id);
    if (!valid) {
      ctx.addIssue({
        code: "custom",
        path: ["id"],
        message:
          account.kind === "user"
            ? "a user's id is a UUID"
            : "an organization's id is 1-60 lowercase letters, digits and dashes",
      });
    }
  });

const accountDefaults = {
  kind: "user" as const,
  name: "Emulated User",
  image: "",
  email: "user@example.com",
};

/** One account: who it is, its bootstrap key, its projects. */
const accountSeed = z.object({
  account: accountInfo.default(accountDefaults),
  bootstrap_key: z
    .object({
      name: z.string().max(64).default("bootstrap"),
      key: z
        .string()
        .regex(/^[a-z0-9]{64}$/, "a key is 64 lowercase alphanumeric characters")
        .optional()
        .describe("the key value; generated when absent"),
    })
    .default({ name: "bootstrap" }),
  limits: limitsSchema
    .optional()
    .describe("the plan's limits: plan (free|launch|scale|business) and any figure overridden"),
  projects: z.array(projectSeed).default([]),
});

/**
 * The first account at the top level (the single-account format), and any others under
 * `accounts`, each with its own key, projects and rate budget.
 */
export const seedSchema = accountSeed.extend({
  accounts: z.array(accountSeed).default([]).describe("further accounts, each with its own rate budget"),
});

export type Seed = z.infer<typeof seedSchema>;
export type AccountSeed = z.infer<typeof accountSeed>;
export type ProjectSeed = z.infer<typeof projectSeed>;
export type BranchSeed = z.infer<typeof branchSeed>;

export function parseSeed(value: unknown): Seed {
  return seedSchema.parse(value ?? {});
}

/** Reads a seed file; `.json` is JSON, anything else YAML (a superset of JSON). */
export async function loadSeedFile(path: string): Promise<Seed> {
  const text = await readFile(path, "utf8");
  return parseSeed(path.endsWith(".json") ? JSON.parse(text) : parseYaml(text));
}
