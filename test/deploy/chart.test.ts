// The Helm chart as its user meets it: it lints, its values land where they
// should, and a wrong value is refused with a message naming it.
import { beforeAll, expect, test } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { deployTools, find, findAll, helmLint, helmTemplate, toolsTimeoutMs, type Loose } from "./render.ts";

beforeAll(() => deployTools(), toolsTimeoutMs);

test.each([
  ["the default values", {}],
  ["watchNamespaces", { watchNamespaces: "{team-a,team-b}" }],
  ["a ServiceMonitor", { "serviceMonitor.enabled": "true" }],
  ["alerts and the dashboard", { "prometheusRule.enabled": "true", "dashboard.enabled": "true" }],
  [
    "one replica, no NetworkPolicy, no roles for people",
    { replicaCount: "1", "networkPolicy.enabled": "false", "userRoles.create": "false" },
  ],
  ["two shards", { "shards[0].name": "a", "shards[0].accountBudgetShare": "0.5", "shards[1].name": "b" }],
  [
    "extra flags and variables",
    { "extraArgs[0]": "--resync-period=30m", "extraEnv[0].name": "A", "extraEnv[0].value": "b" },
  ],
])("helm lint --strict passes with %s", async (_name, values) => {
  expect(await helmLint(values)).toContain("0 chart(s) failed");
});

test("the values reach the operator's configuration", async () => {
  const manifests = await helmTemplate({
    "image.repository": "registry.example.com/platform/neon-operator",
    "image.tag": "1.2.3",
    "image.pullPolicy": "Always",
    replicaCount: "3",
    "credentials.secretName": "neon-admin-key",
    "platform.baseUrl": "https://neon.example.com/api/v2",
    logLevel: "debug",
    "resources.limits.memory": "512Mi",
  });
  const deployment = find(manifests, "Deployment");
  const container = deployment.spec.template.spec.containers[0];
  expect(deployment.spec.replicas).toBe(3);
  expect(container.image).toBe("registry.example.com/platform/neon-operator:1.2.3");
  expect(container.imagePullPolicy).toBe("Always");
  expect(container.resources.limits.memory).toBe("512Mi");
  const env = Object.fromEntries(container.env.map((e: Loose) => [e.name, e.value]));
  expect(env).toMatchObject({
    NEON_OPERATOR_DEFAULT_CREDENTIALS_SECRET: "neon-admin-key",
    NEON_OPERATOR_PLATFORM_BASE_URL: "https://neon.example.com/api/v2",
    NEON_OPERATOR_LOG_LEVEL: "debug",
  });
});

test("extraArgs and extraEnv reach the operator, which reads them as its own settings", async () => {
  const container = find(
    await helmTemplate({
      "extraArgs[0]": "--resync-period=30m",
      "extraArgs[1]": "--concurrency=8",
      "extraEnv[0].name": "NEON_OPERATOR_POLL_INTERVAL",
      "extraEnv[0].value": "2s",
    }),
    "Deployment",
  ).spec.template.spec.containers[0];
  expect(container.args).toEqual(["run", "--resync-period=30m", "--concurrency=8"]);
  // What the process sees: the container's args after `run`, and its env.
  const env = Object.fromEntries(
    container.env.filter((e: Loose) => e.value !== undefined).map((e: Loose) => [e.name, e.value]),
  );
  const config = loadConfig(container.args.slice(1), env);
  expect(config.resyncPeriodMs).toBe(30 * 60_000);
  expect(config.concurrency).toBe(8);
  expect(config.pollIntervalMs).toBe(2_000);
});

test("one replica: the PodDisruptionBudget still lets a drain evict it", async () => {
  const manifests = await helmTemplate({ replicaCount: "1" });
  expect(find(manifests, "Deployment").spec.replicas).toBe(1);
  // maxUnavailable 1 of 1: one disruption allowed (minAvailable 1 would allow none, ever).
  expect(find(manifests, "PodDisruptionBudget").spec.maxUnavailable).toBe(1);
});

test("a credentials Secret of another name is the one the namespaced operator may read", async () => {
  const manifests = await helmTemplate({
    "credentials.secretName": "neon-admin-key",
    watchNamespaces: "{apps}",
  });
  const role = find(manifests, "Role", "neon-cloud-operator-credentials");
  expect(role.rules).toEqual([
    {
      apiGroups: [""],
      resources: ["secrets"],
      resourceNames: ["neon-admin-key"],
      verbs: ["get", "list", "watch"],
    },
  ]);
});

test("a second release in the same namespace has its own names, pods and Lease", async () => {
  const manifests = await helmTemplate({}, "billing");
  const deployment = find(manifests, "Deployment");
  expect(deployment.metadata.name).toBe("billing-neon-cloud-operator");
  expect(deployment.spec.selector.matchLabels["app.kubernetes.io/instance"]).toBe("billing");
  expect(deployment.spec.template.spec.containers[0].env).toContainEqual({
    name: "NEON_OPERATOR_LEADER_ELECTION_ID",
    value: "billing-neon-cloud-operator",
  });
  expect(find(manifests, "ClusterRoleBinding", "billing-neon-cloud-operator").roleRef.name).toBe(
    "billing-neon-cloud-operator",
  );
  expect(
    findAll(manifests, "ClusterRole")
      .map((r) => r.metadata.name)
      .sort(),
  ).toEqual([
    "billing-neon-cloud-operator",
    "billing-neon-cloud-operator-admin",
    "billing-neon-cloud-operator-edit",
    "billing-neon-cloud-operator-grants",
    "billing-neon-cloud-operator-metrics-auth",
    "billing-neon-cloud-operator-metrics-reader",
    "billing-neon-cloud-operator-view",
  ]);
  expect(find(manifests, "RoleBinding", "billing-neon-cloud-operator-identity").subjects[0].name).toBe(
    "billing-neon-cloud-operator",
  );
});

test("shards: a Deployment each, with its selector, Lease and budget share, read by the operator as its settings", async () => {
  const manifests = await helmTemplate({
    "shards[0].name": "a",
    "shards[0].accountBudgetShare": "0.4",
    "shards[1].name": "b",
    "shards[1].accountBudgetShare": "0.3",
    accountBudgetShare: "0.3",
  });
  const deployments = findAll(manifests, "Deployment");
  const configOf = (d: Loose) => {
    const container = d.spec.template.spec.containers[0];
    const env = Object.fromEntries(
      container.env.filter((e: Loose) => e.value !== undefined).map((e: Loose) => [e.name, e.value]),
    );
    return loadConfig(container.args.slice(1), env);
  };
  expect(deployments.map((d) => d.metadata.name)).toEqual([
    "neon-cloud-operator",
    "neon-cloud-operator-shard-a",
    "neon-cloud-operator-shard-b",
  ]);
  const [main, a, b] = deployments.map(configOf);
  const labelled = (shard: string) => ({ "neoncloud.dev/shard": shard });
  // Every resource is reconciled by exactly one of them.
  const takers = (labels: Record<string, string>) =>
    [main, a, b].flatMap((c, i) => ((c!.watchLabelSelector?.matches(labels) ?? true) ? [i] : []));
  expect([{}, labelled("a"), labelled("b")].map(takers)).toEqual([[0], [1], [2]]);
  // A shard named by no Deployment is nobody's: a typo shows as a resource never reconciled.
  expect(takers(labelled("c"))).toEqual([]);
  expect([main, a, b].map((c) => c!.leaderElectionId)).toEqual([
    "neon-cloud-operator",
    "neon-cloud-operator-shard-a",
    "neon-cloud-operator-shard-b",
  ]);
  expect([main, a, b].map((c) => c!.accountBudgetShare)).toEqual([0.3, 0.4, 0.3]);
  // Each shard's pods are its Deployment's alone; the Service and NetworkPolicy select them all.
  const shardA = deployments[1]!;
  expect(shardA.spec.selector.matchLabels).toMatchObject(labelled("a"));
  expect(shardA.spec.template.metadata.labels).toMatchObject(labelled("a"));
  for (const kind of ["Service", "NetworkPolicy"]) {
    const selector =
      find(manifests, kind).spec.selector ?? find(manifests, kind).spec.podSelector.matchLabels;
    for (const key of Object.keys(selector))
      expect(shardA.spec.template.metadata.labels[key]).toBe(selector[key]);
  }
});

test.each([
  [{ "shards[0].name": "A" }, "/shards/0/name"],
  [{ "shards[0].name": "a", "shards[0].accountBudgetShare": "1.5" }, "/shards/0/accountBudgetShare"],
  [{ logLevel: "loud" }, "/logLevel"],
  [{ "watchNamespaces[0]": "Team_A" }, "/watchNamespaces/0"],
  [{ replicaCount: "0" }, "/replicaCount"],
  [{ "platform.baseUrl": "console.neon.tech" }, "/platform/baseUrl"],
  [{ "extraArgs[0]": "resync-period=30m" }, "/extraArgs/0"],
  // --set makes 8 a number; a container's variable is a string (Kubernetes would refuse the Deployment).
  [{ "extraEnv[0].name": "NEON_OPERATOR_CONCURRENCY", "extraEnv[0].value": "8" }, "/extraEnv/0/value"],
  [{ "networkPolicy.httpsPorts": "{0}" }, "/networkPolicy/httpsPorts/0"],
])("a wrong value (%o) is refused, naming it", async (values, path) => {
  await expect(helmTemplate(values)).rejects.toThrow(path);
});

test("no ServiceMonitor unless asked for", async () => {
  expect(findAll(await helmTemplate(), "ServiceMonitor")).toEqual([]);
  const monitor = find(
    await helmTemplate({ "serviceMonitor.enabled": "true", "serviceMonitor.labels.release": "prom" }),
    "ServiceMonitor",
  );
  expect(monitor.metadata.labels?.release).toBe("prom");
  expect(monitor.spec.endpoints).toEqual([
    {
      port: "https-metrics",
      path: "/metrics",
      interval: "30s",
      scheme: "https",
      bearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
      tlsConfig: { insecureSkipVerify: true },
    },
  ]);
});

test("metrics.secure=false serves /metrics over plain HTTP, with no review rights", async () => {
  const manifests = await helmTemplate({ "metrics.secure": "false", "serviceMonitor.enabled": "true" });
  const container = find(manifests, "Deployment").spec.template.spec.containers[0];
  expect(container.ports).toEqual([{ name: "probes", containerPort: 8080, protocol: "TCP" }]);
  expect(container.env.map((e: { name: string }) => e.name)).not.toContain("NEON_OPERATOR_METRICS_SECURE");
  expect(find(manifests, "Service").spec.ports).toEqual([
    { name: "metrics", port: 8080, targetPort: "probes", protocol: "TCP" },
  ]);
  expect(find(manifests, "ServiceMonitor").spec.endpoints).toEqual([
    { port: "metrics", path: "/metrics", interval: "30s" },
  ]);
  const clusterRoles = findAll(manifests, "ClusterRole").map((r) => r.metadata.name);
  expect(clusterRoles.filter((n) => n.includes("metrics"))).toEqual([]);
});
