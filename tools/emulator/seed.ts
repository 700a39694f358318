// The seed file: the account, its bootstrap key, and the projects with their
// branches that the emulated world starts with. YAML or JSON.
import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import { z } from "zod";

const id = z.string().regex(/^[a-z0-9-]{1,60}$/);

const branchSeed = z.object({
  id: id.optional(),
  name: z.string().min(1),
  parent: z.string().optional().describe("name or id of the parent branch (default: the primary branch)"),
});

const projectSeed = z.object({
  id: id.optional(),
  name: z.string().min(1),
  region_id: z.string().default("aws-us-east-2"),
  pg_version: z.number().int().min(14).max(18).default(17),
  org_id: id.optional(),
  provisioner: z.string().default("k8s-neonvm"),
  primary_branch: z.string().default("main").describe("name of the primary branch"),
  branches: z.array(branchSeed).default([]).describe("child branches, without endpoints"),
});

export const seedSchema = z.object({
  account: z
    .object({
      id: z.uuid().optional(),
      name: z.string().default("Emulated User"),
      image: z.string().default(""),
    })
    .default({ name: "Emulated User", image: "" }),
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
  projects: z.array(projectSeed).default([]),
});

export type Seed = z.infer<typeof seedSchema>;
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
