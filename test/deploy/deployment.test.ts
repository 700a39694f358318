// The operator's pods as a cluster admin and the "restricted" Pod Security
// Standard see them, in every way of installing: what runs, how it is
// disrupted, and what may reach it and what it may reach (its NetworkPolicy).
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, test } from "vitest";
import {
  deployTools,
  find,
  helmTemplate,
  kustomize,
  repoRoot,
  toolsTimeoutMs,
  type Loose,
  type Manifest,
} from "./render.ts";

let renderings: Record<string, Manifest[]>;
let packageVersion: string;

beforeAll(async () => {
  await deployTools();
  packageVersion = JSON.parse(await readFile(join(repoRoot, "package.json"), "utf8")).version;
  renderings = {
    "deploy/base": await kustomize("deploy/base"),
    "deploy/namespaced": await kustomize("deploy/namespaced"),
    "chart defaults": await helmTemplate(),
    "chart with watchNamespaces": await helmTemplate({ "watchNamespaces[0]": "default" }),
  };
}, toolsTimeoutMs);

const env = (container: Loose): Record<string, unknown> =>
  Object.fromEntries(container.env.map((e: Loose) => [e.name, e.value ?? e.valueFrom]));

describe.each(["deploy/base", "deploy/namespaced", "chart defaults", "chart with watchNamespaces"])(
  "%s",
  (name) => {
    const deployment = () => find(renderings[name]!, "Deployment", "neon-cloud-operator");
    const pod = () => deployment().spec.template.spec;
    const container = () => pod().containers[0];

    test("two replicas elect a leader through a Lease in the operator's namespace", () => {
      expect(deployment().spec.replicas).toBe(2);
      expect(env(container())).toMatchObject({
        NEON_OPERATOR_LEADER_ELECTION: "true",
        NEON_OPERATOR_LEADER_ELECTION_NAMESPACE: { fieldRef: { fieldPath: "metadata.namespace" } },
        POD_NAMESPACE: { fieldRef: { fieldPath: "metadata.namespace" } },
        POD_NAME: { fieldRef: { fieldPath: "metadata.name" } },
      });
      expect(deployment().spec.strategy.rollingUpdate).toEqual({ maxSurge: 1, maxUnavailable: 0 });
    });

    test("Node's heap limit fits under the memory limit (Node would derive 259 MiB from 256 MiB)", () => {
      const options = (env(container()).NODE_OPTIONS as string | undefined) ?? "";
      const flag = (name: string) => Number(new RegExp(`--${name}=(\\d+)`).exec(options)?.[1]);
      // V8's heap limit: the old space plus three semi-spaces (measured with Node 24).
      const heapMiB = flag("max-old-space-size") + 3 * flag("max-semi-space-size");
      const limit = String(container().resources.limits.memory);
      expect(limit).toMatch(/^\d+Mi$/);
      expect(heapMiB).toBeLessThan(0.8 * Number.parseInt(limit));
    });

    test("the pod meets the restricted Pod Security Standard", () => {
      expect(pod().securityContext).toMatchObject({
        runAsNonRoot: true,
        runAsUser: 65532,
        seccompProfile: { type: "RuntimeDefault" },
      });
      expect(pod().containers).toHaveLength(1);
      expect(pod().initContainers).toBeUndefined();
      expect(container().securityContext).toEqual({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        runAsNonRoot: true,
        capabilities: { drop: ["ALL"] },
        seccompProfile: { type: "RuntimeDefault" },
      });
      expect(pod().hostNetwork ?? false).toBe(false);
    });

    test("only /tmp is writable, on an emptyDir", () => {
      expect(container().volumeMounts).toEqual([{ name: "tmp", mountPath: "/tmp" }]);
      expect(pod().volumes).toEqual([{ name: "tmp", emptyDir: { sizeLimit: "64Mi" } }]);
    });

    test("the kubelet probes /healthz and /readyz over plain HTTP; /metrics is served over HTTPS", () => {
      expect(container().ports).toEqual([
        { name: "probes", containerPort: 8080, protocol: "TCP" },
        { name: "https-metrics", containerPort: 8443, protocol: "TCP" },
      ]);
      expect(env(container()).NEON_OPERATOR_METRICS_ADDRESS).toBe(":8080");
      expect(env(container()).NEON_OPERATOR_METRICS_SECURE).toBe("true");
      expect(env(container()).NEON_OPERATOR_METRICS_SECURE_ADDRESS).toBe(":8443");
      expect(container().livenessProbe.httpGet).toEqual({ path: "/healthz", port: "probes" });
      expect(container().readinessProbe.httpGet).toEqual({ path: "/readyz", port: "probes" });
    });

    test("CPU and memory are requested and limited", () => {
      const { requests, limits } = container().resources;
      expect(Object.keys(requests).sort()).toEqual(["cpu", "memory"]);
      expect(Object.keys(limits).sort()).toEqual(["cpu", "memory"]);
    });

    test("the image runs the operator at the package's version", () => {
      expect(container().image).toBe(`ghcr.io/neon-cloud-operator/neon-cloud-operator:${packageVersion}`);
      expect(container().args).toEqual(["run"]);
      expect(pod().serviceAccountName).toBe("neon-cloud-operator");
    });

    test("the default credentials are the Secret neon-api-key in the operator's own namespace", () => {
      expect(env(container()).NEON_OPERATOR_DEFAULT_CREDENTIALS_SECRET).toBe("neon-api-key");
    });

    test("a drain evicts one replica at a time, never blocked by one that is not Ready", () => {
      const selector = deployment().spec.selector.matchLabels;
      expect(deployment().spec.template.metadata.labels).toMatchObject(selector);
      const pdb = find(renderings[name]!, "PodDisruptionBudget");
      expect(pdb.spec).toEqual({
        maxUnavailable: 1,
        unhealthyPodEvictionPolicy: "AlwaysAllow",
        selector: { matchLabels: selector },
      });
    });

    test("the metrics Service reaches the pods", () => {
      const selector = deployment().spec.selector.matchLabels;
      const service = find(renderings[name]!, "Service", "neon-cloud-operator-metrics");
      expect(service.spec.selector).toEqual(selector);
      expect(service.spec.ports).toEqual([
        { name: "https-metrics", port: 8443, targetPort: "https-metrics", protocol: "TCP" },
      ]);
    });

    test("the pod gets longer to stop than the operator's 30 s shutdown deadline", () => {
      expect(pod().terminationGracePeriodSeconds).toBeGreaterThan(30);
    });
  },
);

test("the namespaced variants tell the operator which namespace to watch; the others watch all", () => {
  const watched = (name: string) =>
    env(find(renderings[name]!, "Deployment").spec.template.spec.containers[0]).NEON_OPERATOR_NAMESPACES;
  // deploy/namespaced: the namespace its pod runs in, which kustomize's `namespace:` sets.
  expect(watched("deploy/namespaced")).toEqual({ fieldRef: { fieldPath: "metadata.namespace" } });
  expect(watched("chart with watchNamespaces")).toBe("default");
  for (const name of ["deploy/base", "chart defaults"]) {
    const container = find(renderings[name]!, "Deployment").spec.template.spec.containers[0];
    expect(env(container).NEON_OPERATOR_NAMESPACES, name).toBeUndefined();
  }
});
