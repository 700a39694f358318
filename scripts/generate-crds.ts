// `npm run generate`: writes crds/*.yaml from the zod schemas in src/api, and
// the copies that kustomize (deploy/crds/) and Helm (the chart's files/crds/)
// need because neither loads files from outside its own folder; the field
// reference under docs/reference/; the RBAC (src/api/rbac.ts) of deploy/cluster,
// deploy/base, deploy/operator and the Helm chart; the chart's copies of the
// alerts and dashboard components; deploy/operator's workload, rendered from the
// chart's templates (with helm, built once from the Go module proxy); and the
// failure table of the controllers in docs/controllers.md.
import { copyFile, mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { crdFileName, kinds } from "../src/api/index.ts";
import { rbacFiles } from "../src/api/rbac-files.ts";
import { buildHelm } from "../test/support/helm.ts";
import { renderFromChart } from "./deploy-from-chart.ts";
import { renderCrdYaml } from "../src/api/kind.ts";
import { referenceFileName, renderReference } from "../src/api/reference.ts";
import { controllersDoc, withFailureTables } from "./controllers-doc.ts";

const root = join(import.meta.dirname, "..");
const targets = [
  join(root, "crds"),
  join(root, "deploy", "crds"),
  join(root, "deploy", "helm", "neon-cloud-operator", "files", "crds"),
];
for (const dir of targets) {
  await mkdir(dir, { recursive: true });
  for (const kind of kinds) {
    const file = join(dir, crdFileName(kind));
    await writeFile(file, renderCrdYaml(kind));
    process.stdout.write(`wrote ${file}\n`);
  }
}

const docs = join(root, "docs", "reference");
await mkdir(docs, { recursive: true });
for (const kind of kinds) {
  const file = join(docs, referenceFileName(kind));
  await writeFile(file, renderReference(kind));
  process.stdout.write(`wrote ${file}\n`);
}

for (const [path, render] of Object.entries(rbacFiles)) {
  const file = join(root, path);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, render());
  process.stdout.write(`wrote ${file}\n`);
}

// The chart's optional alerts and dashboard are the kustomize components' own
// files: written there once, copied because Helm reads no file outside its chart.
const chartFiles = join(root, "deploy", "helm", "neon-cloud-operator", "files");
for (const [from, to] of [
  ["alerts/prometheusrule.yaml", "prometheusrule.yaml"],
  ["dashboard/neon-cloud-operator.json", "dashboard.json"],
] as const) {
  const file = join(chartFiles, to);
  await copyFile(join(root, "deploy", "components", from), file);
  process.stdout.write(`wrote ${file}\n`);
}

// After the chart's files above: the chart is the one source of the operator's workload.
for (const [path, text] of Object.entries(await renderFromChart(await buildHelm(), root))) {
  const file = join(root, path);
  await writeFile(file, text);
  process.stdout.write(`wrote ${file}\n`);
}

// What each failure means, in docs/controllers.md.
await writeFile(controllersDoc, await withFailureTables(await readFile(controllersDoc, "utf8")));
process.stdout.write(`wrote ${controllersDoc}\n`);
