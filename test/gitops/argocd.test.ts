// One Argo CD health script for every kind: deploy/argocd/health.lua is what argocd-cm.yaml
// registers under each kind the operator serves, and what any Lua the docs show is. What the
// script answers for each phase of each kind is checked live in phases.kube.test.ts.
import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { kinds } from "../../src/api/index.ts";
import { repoRoot } from "../support/gitops.ts";

const script = () => readFile(join(repoRoot, "deploy", "argocd", "health.lua"), "utf8");

describe("deploy/argocd", () => {
  it("argocd-cm.yaml registers health.lua for every kind of src/api, and nothing else", async () => {
    const cm = parse(await readFile(join(repoRoot, "deploy", "argocd", "argocd-cm.yaml"), "utf8")) as {
      data: Record<string, string>;
    };
    const lua = await script();
    expect(cm.data).toEqual(
      Object.fromEntries(
        // Every kind with a status the operator writes (a CredentialsGrant has none: nothing to judge).
        kinds
          .filter((k) => k.status)
          .map((k) => [`resource.customizations.health.${k.group}_${k.kind}`, lua] as const),
      ),
    );
  });

  it("every Lua block in the README and docs/ is health.lua itself (no second, older copy)", async () => {
    const lua = await script();
    const files = [
      "README.md",
      ...(await readdir(join(repoRoot, "docs"))).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`),
    ];
    for (const file of files) {
      const text = await readFile(join(repoRoot, file), "utf8");
      for (const block of text.matchAll(/```lua\n([\s\S]*?)```/g))
        expect(block[1], `${file} shows a Lua health check that is not deploy/argocd/health.lua`).toBe(lua);
    }
    // docs/operations.md points to the file rather than copying it.
    const operations = await readFile(join(repoRoot, "docs", "operations.md"), "utf8");
    expect(operations).toContain("deploy/argocd/health.lua");
  });
});
