// The operator's workload is written once, in the Helm chart's templates: `npm run generate`
// renders them with the chart's defaults (release neon-cloud-operator in namespace
// neon-cloud-operator) into deploy/operator/ for kustomize, without the labels only Helm sets.
// test/deploy/generated.test.ts fails when a committed file differs from this rendering.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { format, resolveConfig } from "prettier";
import { parseDocument } from "yaml";

const exec = promisify(execFile);

/** Labels Helm adds for its own bookkeeping; kustomize users have no release. */
export const helmOnlyLabels = ["helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/version"];

/** deploy/operator/<file> ← the chart's templates/<file>. */
export const fromChart = [
  "serviceaccount.yaml",
  "deployment.yaml",
  "poddisruptionbudget.yaml",
  "service.yaml",
  "networkpolicy.yaml",
] as const;

/** The files of deploy/operator/ rendered from the chart, by path from the repository root. */
export async function renderFromChart(helm: string, root: string): Promise<Record<string, string>> {
  const chart = join(root, "deploy", "helm", "neon-cloud-operator");
  const prettier = await resolveConfig(join(root, "deploy", "operator", "deployment.yaml"));
  const out: Record<string, string> = {};
  for (const file of fromChart) {
    const { stdout } = await exec(helm, [
      "template",
      "neon-cloud-operator",
      chart,
      "--namespace",
      "neon-cloud-operator",
      "--show-only",
      `templates/${file}`,
    ]);
    // Helm's "Source: …" comment becomes where to edit it.
    const doc = parseDocument(stdout.replace(/^---\n/, "").replace(/^# Source: .*\n/m, ""));
    for (const label of helmOnlyLabels) doc.deleteIn(["metadata", "labels", label]);
    const header = `# Generated from deploy/helm/neon-cloud-operator/templates/${file} by \`npm run generate\`:\n# edit the template there.\n`;
    out[`deploy/operator/${file}`] = await format(header + doc.toString(), { ...prettier, parser: "yaml" });
  }
  return out;
}
