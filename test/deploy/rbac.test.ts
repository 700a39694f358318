// What the operator may do, as a security review reads it: exactly the grants
// its controllers need, never a wildcard, the same in every way of installing.
import { beforeAll, describe, expect, test } from "vitest";
import {
  deployTools,
  find,
  findAll,
  grants,
  helmTemplate,
  kustomize,
  toolsTimeoutMs,
  type Manifest,
} from "./render.ts";

const rbacKinds = ["ClusterRole", "Role"];

/**
 * Secure metrics: the two reviews (cluster-scoped APIs, so only a ClusterRole grants them) bound
 * to the operator, and the metrics reader bound to nobody (the user binds it to a scraper).
 */
const metricsAuthRoles = ["neon-cloud-operator-metrics-auth", "neon-cloud-operator-metrics-reader"];
const metricsAuthGrants = [
  "authentication.k8s.io tokenreviews create",
  "authorization.k8s.io subjectaccessreviews create",
];
const isMetricsAuth = (m: Manifest) => metricsAuthRoles.includes(m.metadata.name);

/** The operator's grants on the resources it manages, in every watched namespace. */
const watchedNamespaceGrants = [
  ...["computeendpoints", "apikeys", "branches", "projects"].flatMap((r) => [
    ...["get", "list", "watch", "patch"].map((v) => `neoncloud.dev ${r} ${v}`),
    `neoncloud.dev ${r}/status patch`,
    `neoncloud.dev ${r}/finalizers update`,
  ]),
  ...["get", "list", "watch", "create", "patch", "delete"].map((v) => `core secrets ${v}`),
  ...["list", "watch", "create", "patch"].map((v) => `core configmaps ${v}`),
  "events.k8s.io events create",
  "events.k8s.io events patch",
].sort();

const leaseGrants = ["get", "create", "update"].map((v) => `coordination.k8s.io leases ${v}`).sort();

let renderings: Record<string, Manifest[]>;

beforeAll(async () => {
  await deployTools();
  renderings = {
    "deploy/base": await kustomize("deploy/base"),
    "deploy/namespaced": await kustomize("deploy/namespaced"),
    "chart defaults": await helmTemplate(),
    "chart with watchNamespaces": await helmTemplate({ "watchNamespaces[0]": "default" }),
  };
}, toolsTimeoutMs);

describe.each(["deploy/base", "deploy/namespaced", "chart defaults", "chart with watchNamespaces"])(
  "%s",
  (name) => {
    test("no rule grants a wildcard verb, resource or API group", () => {
      const roles = renderings[name]!.filter((m) => rbacKinds.includes(m.kind));
      expect(roles.length).toBeGreaterThan(0);
      for (const role of roles) {
        for (const rule of role.rules) {
          for (const field of ["verbs", "resources", "apiGroups", "resourceNames"]) {
            expect(rule[field] ?? [], `${role.kind} ${role.metadata.name} ${field}`).not.toContain("*");
          }
          if (role.metadata.name !== "neon-cloud-operator-metrics-reader")
            expect(rule.nonResourceURLs, `${role.kind} ${role.metadata.name}`).toBeUndefined();
        }
      }
    });

    test("secure metrics: the operator may review tokens and access; readers may get /metrics only", () => {
      const auth = find(renderings[name]!, "ClusterRole", "neon-cloud-operator-metrics-auth");
      expect(grants(auth.rules)).toEqual(metricsAuthGrants);
      const reader = find(renderings[name]!, "ClusterRole", "neon-cloud-operator-metrics-reader");
      expect(reader.rules).toEqual([{ nonResourceURLs: ["/metrics"], verbs: ["get"] }]);
      const bindings = findAll(renderings[name]!, "ClusterRoleBinding").filter(isMetricsAuth);
      expect(bindings.map((b) => b.roleRef.name)).toEqual(["neon-cloud-operator-metrics-auth"]);
    });

    test("leases are granted only in the operator's own namespace", () => {
      const roles = renderings[name]!.filter((m) => rbacKinds.includes(m.kind));
      const withLeases = roles.filter((r) => grants(r.rules).some((g) => g.includes(" leases ")));
      expect(withLeases.map((r) => `${r.kind} ${r.metadata.namespace}`)).toEqual([
        "Role neon-cloud-operator",
      ]);
      expect(grants(withLeases[0]!.rules)).toEqual(leaseGrants);
    });

    test("every binding gives its role to the operator's ServiceAccount and nobody else", () => {
      const bindings = renderings[name]!.filter((m) =>
        ["ClusterRoleBinding", "RoleBinding"].includes(m.kind),
      );
      for (const binding of bindings) {
        expect(binding.subjects).toEqual([
          { kind: "ServiceAccount", name: "neon-cloud-operator", namespace: "neon-cloud-operator" },
        ]);
        const role = find(renderings[name]!, binding.roleRef.kind, binding.roleRef.name);
        if (binding.kind === "RoleBinding") expect(role.metadata.namespace).toBe(binding.metadata.namespace);
      }
    });
  },
);

describe.each(["deploy/base", "chart defaults"])("%s (all namespaces)", (name) => {
  test("the ClusterRole grants exactly what the controllers need", () => {
    const clusterRoles = findAll(renderings[name]!, "ClusterRole").filter((m) => !isMetricsAuth(m));
    expect(clusterRoles).toHaveLength(1);
    expect(grants(clusterRoles[0]!.rules)).toEqual(watchedNamespaceGrants);
  });
});

describe.each(["deploy/namespaced", "chart with watchNamespaces"])("%s (one namespace)", (name) => {
  test("nothing is granted cluster-wide but the reviews of secure metrics", () => {
    expect(findAll(renderings[name]!, "ClusterRole").filter((m) => !isMetricsAuth(m))).toEqual([]);
    expect(findAll(renderings[name]!, "ClusterRoleBinding").filter((m) => !isMetricsAuth(m))).toEqual([]);
  });

  test("the watched namespace gets the same grants the ClusterRole gives elsewhere", () => {
    const role = findAll(renderings[name]!, "Role").find((r) => r.metadata.namespace === "default");
    expect(grants(role?.rules ?? [])).toEqual(watchedNamespaceGrants);
  });

  test("in its own namespace the operator may read only the credentials Secret", () => {
    const own = findAll(renderings[name]!, "Role").filter(
      (r) => r.metadata.namespace === "neon-cloud-operator" && !r.metadata.name.endsWith("-leader-election"),
    );
    expect(own.flatMap((r) => grants(r.rules))).toEqual([
      "core secrets get neon-api-key",
      "core secrets list neon-api-key",
      "core secrets watch neon-api-key",
    ]);
  });
});

test("a chart watching several namespaces grants each of them, and nothing else", async () => {
  const manifests = await helmTemplate({ watchNamespaces: "{team-a,team-b}" });
  const watched = findAll(manifests, "Role").filter((r) => r.metadata.name === "neon-cloud-operator");
  expect(watched.map((r) => r.metadata.namespace)).toEqual(["team-a", "team-b"]);
  for (const role of watched) expect(grants(role.rules)).toEqual(watchedNamespaceGrants);
  const bindings = findAll(manifests, "RoleBinding").filter((r) => r.metadata.name === "neon-cloud-operator");
  expect(bindings.map((b) => b.metadata.namespace)).toEqual(["team-a", "team-b"]);
});

test("a chart watching its own namespace needs no extra credentials Role", async () => {
  const manifests = await helmTemplate({ watchNamespaces: "{neon-cloud-operator}" });
  expect(findAll(manifests, "Role").map((r) => r.metadata.name)).toEqual([
    "neon-cloud-operator-leader-election",
    "neon-cloud-operator",
  ]);
});
