// What a reader copies from the docs agrees with the repository: the README's example is the sample
// it names, every remote kustomize URL has one form pointing at a folder that exists, the samples
// and the docs' examples make no two platform objects of the same name, and the user pages speak
// the user's terms (no issue numbers, no source or test file names, no client internals).
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";

const repoRoot = join(import.meta.dirname, "..", "..");
const read = (path: string) => readFile(join(repoRoot, path), "utf8");

const userPages = [
  "docs/install.md",
  "docs/project.md",
  "docs/branch.md",
  "docs/snapshot.md",
  "docs/connection-secrets.md",
  "docs/operations.md",
  "docs/gitops.md",
  "docs/security.md",
  "docs/preview-environments.md",
];

interface Obj {
  kind?: string;
  metadata?: { name?: string };
  spec?: { projectId?: string; name?: string };
}

function yamlBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
}

async function objectsIn(path: string): Promise<Obj[]> {
  return parseAllDocuments(await read(path)).map((d) => d.toJSON() as Obj);
}

describe("the docs agree with the repository", () => {
  it("the README's ComputeEndpoint is samples/computeendpoint-shop-dev.yaml", async () => {
    const [example] = yamlBlocks(await read("README.md"));
    expect(parse(example ?? "")).toEqual(parse(await read("samples/computeendpoint-shop-dev.yaml")));
  });

  it("every remote kustomize URL is the repository at main, naming a folder that exists", async () => {
    const urls: string[] = [];
    for (const page of ["README.md", ...userPages])
      urls.push(...((await read(page)).match(/https:\/\/github\.com\/[^\s`)]*\/\/[^\s`)]*/g) ?? []));
    expect(urls.length).toBeGreaterThanOrEqual(6);
    for (const url of urls) {
      const match =
        /^https:\/\/github\.com\/neon-cloud-operator\/neon-cloud-operator\/\/([\w/-]+)\?ref=main$/.exec(url);
      expect(match, url).not.toBeNull();
      expect(existsSync(join(repoRoot, match?.[1] ?? "", "kustomization.yaml")), url).toBe(true);
    }
  });

  it("no two samples make a platform branch of the same name in one project", async () => {
    const files = [
      ...(await readdir(join(repoRoot, "samples")))
        .filter((f) => f.endsWith(".yaml"))
        .map((f) => `samples/${f}`),
      ...(await readdir(join(repoRoot, "samples/preview-environment/base")))
        .filter((f) => f.endsWith(".yaml"))
        .map((f) => `samples/preview-environment/base/${f}`),
    ];
    const names: string[] = [];
    for (const file of files)
      for (const o of await objectsIn(file))
        if (o.kind === "Branch") names.push(`${o.spec?.projectId}/${o.spec?.name ?? o.metadata?.name}`);
    expect(names.length).toBeGreaterThanOrEqual(2);
    expect(new Set(names).size).toBe(names.length);
  });

  it("docs/project.md's example project is not one the tenants sample makes", async () => {
    const [example] = yamlBlocks(await read("docs/project.md"));
    const project = parseAllDocuments(example ?? "")
      .map((d) => d.toJSON() as Obj)
      .find((o) => o.kind === "Project");
    const made: string[] = [];
    for (const tenant of await readdir(join(repoRoot, "samples/tenants"), { withFileTypes: true })) {
      if (!tenant.isDirectory() || tenant.name === "base") continue;
      const text = await read(`samples/tenants/${tenant.name}/kustomization.yaml`);
      made.push(...[...text.matchAll(/value: (\S+)/g)].map((m) => m[1] ?? ""), `tenant-${tenant.name}`);
    }
    expect(made.length).toBeGreaterThanOrEqual(2);
    expect(made).not.toContain(project?.spec?.name);
    expect(made).not.toContain(project?.metadata?.name);
  });

  it("the user pages speak the user's terms: no issue numbers, source or test files, client internals", async () => {
    const internal = /\bissue \d+|\b(?:src|test|tools)\/[\w./-]+|\b[\w-]+\.(?:test\.)?ts\b|mutation gate/i;
    const found: string[] = [];
    for (const page of userPages) {
      const lines = (await read(page)).split("\n");
      lines.forEach((line, i) => {
        // Running the operator from a checkout names its entry point: that is a command, not an internal.
        if (internal.test(line.replace("npm exec -- node src/cli.ts", "")))
          found.push(`${page}:${i + 1}: ${line}`);
      });
    }
    expect(found).toEqual([]);
  });
});
