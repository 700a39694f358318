// The kustomize manifests and the Helm chart install the same operator: same
// objects, same grants, same pod. A change made to one and not the other fails here.
import { beforeAll, expect, test } from "vitest";
import { installDocSteps } from "./install-doc.ts";
import {
  deployTools,
  effectiveGrants,
  grants,
  helmTemplate,
  helmTemplateText,
  kustomize,
  kustomizeOverlay,
  namespacedInstall,
  parseManifests,
  release,
  toolsTimeoutMs,
  type Manifest,
} from "./render.ts";

/** Labels only Helm adds (release bookkeeping), and Helm's keep-on-uninstall policy. */
const helmOnlyLabels = ["helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/version"];

/** An object as compared: Helm's bookkeeping removed, rules as grants, env in name order. */
function comparable(m: Manifest): Manifest {
  const copy = structuredClone(m);
  const labels = copy.metadata.labels;
  if (labels) {
    for (const label of helmOnlyLabels) delete labels[label];
  }
  if (copy.metadata.annotations) {
    delete copy.metadata.annotations["helm.sh/resource-policy"];
    if (Object.keys(copy.metadata.annotations).length === 0) delete copy.metadata.annotations;
  }
  if (Array.isArray(copy.rules)) copy.rules = grants(copy.rules);
  for (const container of copy.spec?.template?.spec?.containers ?? []) {
    container.env?.sort((a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name));
  }
  return copy;
}

function byIdentity(manifests: Manifest[]): Record<string, Manifest> {
  return Object.fromEntries(
    manifests
      // Helm installs into a namespace it does not own (`--create-namespace`).
      .filter((m) => m.kind !== "Namespace")
      .map((m) => [`${m.kind} ${m.metadata.namespace ?? ""}/${m.metadata.name}`, comparable(m)]),
  );
}

/** The operator's own objects, apart from RBAC (compared as grants). */
const workloadKinds = ["ServiceAccount", "Deployment", "PodDisruptionBudget", "Service", "NetworkPolicy"];

/** The workload objects, comparable, with the watched-namespace variable taken out of the pod. */
function withoutWatched(manifests: Manifest[]) {
  const objects = byIdentity(manifests.filter((m) => workloadKinds.includes(m.kind)));
  const watched: unknown[] = [];
  for (const m of Object.values(objects)) {
    for (const container of m.spec?.template?.spec?.containers ?? []) {
      watched.push(...container.env.filter((e: { name: string }) => e.name === "NEON_OPERATOR_NAMESPACES"));
      container.env = container.env.filter((e: { name: string }) => e.name !== "NEON_OPERATOR_NAMESPACES");
    }
  }
  return { objects, watched };
}

beforeAll(() => deployTools(), toolsTimeoutMs);

test("the chart's defaults render what deploy/base applies", async () => {
  const fromKustomize = byIdentity(await kustomize("deploy/base"));
  const fromHelm = byIdentity(await helmTemplate());
  expect(Object.keys(fromHelm).sort()).toEqual(Object.keys(fromKustomize).sort());
  for (const [identity, manifest] of Object.entries(fromKustomize)) {
    expect(fromHelm[identity], identity).toEqual(manifest);
  }
});

test("the chart installed in the one namespace it watches runs and grants what deploy/namespaced does", async () => {
  const admin = (await installDocSteps()).get("namespaced-admin");
  const namespaced = await namespacedInstall(admin?.script ?? "", "team-a");
  const chart = parseManifests(
    await helmTemplateText(
      { "watchNamespaces[0]": "team-a", "crds.install": "false" },
      release.name,
      "team-a",
    ),
  );
  const operator = { namespace: "team-a", name: "neon-cloud-operator" };
  expect(effectiveGrants(chart, operator)).toEqual(effectiveGrants(namespaced, operator));
  // The same workload; the chart names the watched namespace, deploy/namespaced the pod's own.
  const fromChart = withoutWatched(chart);
  const fromKustomize = withoutWatched(namespaced);
  expect(fromChart.watched).toEqual([{ name: "NEON_OPERATOR_NAMESPACES", value: "team-a" }]);
  expect(fromKustomize.watched).toEqual([
    { name: "NEON_OPERATOR_NAMESPACES", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
  ]);
  expect(Object.keys(fromChart.objects).sort()).toEqual(Object.keys(fromKustomize.objects).sort());
  for (const [identity, manifest] of Object.entries(fromKustomize.objects))
    expect(fromChart.objects[identity], identity).toEqual(manifest);
});

test("serviceMonitor.enabled renders the ServiceMonitor of the kustomize component", async () => {
  const fromKustomize = byIdentity(
    await kustomizeOverlay({ resources: ["deploy/base"], components: ["deploy/components/servicemonitor"] }),
  );
  const fromHelm = byIdentity(await helmTemplate({ "serviceMonitor.enabled": "true" }));
  const identity = "ServiceMonitor neon-cloud-operator/neon-cloud-operator";
  expect(fromKustomize[identity]).toBeDefined();
  expect(fromHelm[identity]).toEqual(fromKustomize[identity]);
  expect(byIdentity(await helmTemplate())[identity]).toBeUndefined();
});

test("prometheusRule.enabled renders the PrometheusRule of the alerts component", async () => {
  const fromKustomize = byIdentity(
    await kustomizeOverlay({ resources: ["deploy/base"], components: ["deploy/components/alerts"] }),
  );
  const fromHelm = byIdentity(await helmTemplate({ "prometheusRule.enabled": "true" }));
  const identity = "PrometheusRule neon-cloud-operator/neon-cloud-operator";
  expect(fromKustomize[identity]).toBeDefined();
  expect(fromHelm[identity]).toEqual(fromKustomize[identity]);
  expect(byIdentity(await helmTemplate())[identity]).toBeUndefined();
});

test("dashboard.enabled renders the dashboard of the dashboard component, for Grafana's sidecar", async () => {
  const fromKustomize = byIdentity(
    await kustomizeOverlay({ resources: ["deploy/base"], components: ["deploy/components/dashboard"] }),
  );
  const fromHelm = byIdentity(await helmTemplate({ "dashboard.enabled": "true" }));
  const identity = "ConfigMap neon-cloud-operator/neon-cloud-operator-dashboard";
  const expected = fromKustomize[identity];
  if (!expected) throw new Error(`the dashboard component renders no ${identity}`);
  // Helm adds its usual labels; what Grafana needs is the sidecar's label and the same JSON.
  expect(fromHelm[identity]?.metadata.labels).toMatchObject(expected.metadata.labels ?? {});
  expect(fromHelm[identity]?.data).toEqual(expected.data);
  expect(byIdentity(await helmTemplate())[identity]).toBeUndefined();
});
