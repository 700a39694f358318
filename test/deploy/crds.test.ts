// The CRDs that deploy/ and the chart install are the generated ones in crds/.
// kustomize and Helm only read files inside their own folders, so each keeps
// a copy; a stale copy fails here with the command that refreshes it.
import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, test } from "vitest";
import { parse } from "yaml";
import {
  chartDir,
  deployTools,
  findAll,
  helmTemplate,
  kustomize,
  repoRoot,
  toolsTimeoutMs,
} from "./render.ts";

const refresh = "cp crds/*.yaml deploy/crds/ && cp crds/*.yaml deploy/helm/neon-cloud-operator/files/crds/";

async function generatedCrds(): Promise<Map<string, string>> {
  const dir = join(repoRoot, "crds");
  const files = (await readdir(dir)).filter((f) => f.endsWith(".yaml")).sort();
  return new Map(
    await Promise.all(files.map(async (f) => [f, await readFile(join(dir, f), "utf8")] as const)),
  );
}

describe.each([
  ["deploy/crds", join(repoRoot, "deploy", "crds")],
  ["the chart's files/crds", join(chartDir, "files", "crds")],
])("%s", (_name, dir) => {
  test("holds exactly the generated CRDs, byte for byte", async () => {
    const generated = await generatedCrds();
    const copies = (await readdir(dir))
      .filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml")
      .sort();
    expect(copies, `refresh with: ${refresh}`).toEqual([...generated.keys()]);
    for (const [file, text] of generated) {
      expect(await readFile(join(dir, file), "utf8"), `${file} is stale; refresh with: ${refresh}`).toBe(
        text,
      );
    }
  });
});

describe("the installed CRDs", () => {
  let expected: Record<string, unknown>;
  beforeAll(async () => {
    await deployTools();
    expected = Object.fromEntries(
      [...(await generatedCrds()).values()].map((text) => {
        const crd = parse(text);
        return [crd.metadata.name, crd];
      }),
    );
  }, toolsTimeoutMs);

  test.each(["deploy/base", "deploy/cluster", "deploy/crds"])(
    "%s installs the generated CRDs unchanged",
    async (dir) => {
      const crds = findAll(await kustomize(dir), "CustomResourceDefinition");
      expect(Object.fromEntries(crds.map((c) => [c.metadata.name, c]))).toEqual(expected);
    },
  );

  test("the chart installs the generated CRDs, kept on uninstall so no resource is deleted with them", async () => {
    const crds = findAll(await helmTemplate(), "CustomResourceDefinition");
    for (const crd of crds) {
      expect(crd.metadata.annotations).toEqual({ "helm.sh/resource-policy": "keep" });
      delete crd.metadata.annotations;
    }
    expect(Object.fromEntries(crds.map((c) => [c.metadata.name, c]))).toEqual(expected);
  });

  test("deploy/namespaced installs no CRD: a cluster administrator does (deploy/cluster)", async () => {
    expect(findAll(await kustomize("deploy/namespaced"), "CustomResourceDefinition")).toEqual([]);
  });

  test("crds.install=false leaves the CRDs to someone else", async () => {
    expect(findAll(await helmTemplate({ "crds.install": "false" }), "CustomResourceDefinition")).toEqual([]);
  });
});
