// The monitoring components render into an overlay as a user adds them
// (docs/gitops.md); what they contain is checked against a running operator
// in phases.kube.test.ts.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, test } from "vitest";
import { kustomizeOverlay, repoRoot } from "../deploy/render.ts";

test("an overlay with the alerts and dashboard components adds the PrometheusRule and the dashboard", async () => {
  const rendered = await kustomizeOverlay({
    resources: ["deploy/base"],
    components: [
      "deploy/components/servicemonitor",
      "deploy/components/alerts",
      "deploy/components/dashboard",
    ],
  });
  const rule = rendered.find((m) => m.kind === "PrometheusRule");
  expect(rule?.metadata).toMatchObject({ name: "neon-cloud-operator", namespace: "neon-cloud-operator" });
  const dashboard = rendered.find(
    (m) => m.kind === "ConfigMap" && m.metadata.name === "neon-cloud-operator-dashboard",
  );
  // Grafana's sidecar loads ConfigMaps with this label, in any namespace it watches.
  expect(dashboard?.metadata).toMatchObject({
    namespace: "neon-cloud-operator",
    labels: { grafana_dashboard: "1" },
  });
  const json = await readFile(
    join(repoRoot, "deploy", "components", "dashboard", "neon-cloud-operator.json"),
    "utf8",
  );
  expect(JSON.parse((dashboard?.data as Record<string, string>)["neon-cloud-operator.json"] ?? "")).toEqual(
    JSON.parse(json),
  );
});
