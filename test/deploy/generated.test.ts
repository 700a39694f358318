// deploy/operator's workload is generated from the Helm chart's templates (`npm run generate`,
// scripts/deploy-from-chart.ts): the chart is its one source, and a change made to a committed
// copy, or to the chart without regenerating, fails here.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, expect, test } from "vitest";
import { renderFromChart } from "../../scripts/deploy-from-chart.ts";
import { helmBinary, repoRoot, toolsTimeoutMs } from "./render.ts";

let rendered: Record<string, string>;

beforeAll(async () => {
  rendered = await renderFromChart(await helmBinary(), repoRoot);
}, toolsTimeoutMs);

test("every workload file of deploy/operator is the chart's rendering, as committed", async () => {
  expect(Object.keys(rendered).sort()).toEqual([
    "deploy/operator/deployment.yaml",
    "deploy/operator/networkpolicy.yaml",
    "deploy/operator/poddisruptionbudget.yaml",
    "deploy/operator/service.yaml",
    "deploy/operator/serviceaccount.yaml",
  ]);
  for (const [path, text] of Object.entries(rendered)) {
    expect(await readFile(join(repoRoot, path), "utf8"), `${path} is stale: run npm run generate`).toBe(text);
  }
});

test("the generated files carry none of Helm's own labels", () => {
  for (const [path, text] of Object.entries(rendered)) {
    expect(text, path).not.toMatch(
      /helm\.sh\/chart|app\.kubernetes\.io\/managed-by|app\.kubernetes\.io\/version/,
    );
  }
});
