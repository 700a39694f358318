// What the operator and the people using it may do, as a security review reads it: exactly the
// grants the controllers need, never a wildcard, the same whichever way it is installed; and
// roles for people that let them use the resources of their namespace, never write status, and
// leave CredentialsGrants to cluster administrators.
import { beforeAll, describe, expect, test } from "vitest";
import { installDocSteps } from "./install-doc.ts";
import {
  deployTools,
  effectiveGrants,
  find,
  findAll,
  grants,
  helmTemplate,
  kustomize,
  namespacedInstall,
  toolsTimeoutMs,
  type Manifest,
} from "./render.ts";

const kinds = ["computeendpoints", "apikeys", "branches", "projects", "snapshots"];

/** The operator's grants on the resources it manages, in every namespace it watches. */
const watched = [
  ...kinds.flatMap((r) => ["get", "list", "watch", "patch"].map((v) => `neoncloud.dev ${r} ${v}`)),
  ...kinds.map((r) => `neoncloud.dev ${r}/status patch`),
  ...kinds.map((r) => `neoncloud.dev ${r}/finalizers update`),
  ...["get", "list", "watch", "create", "patch", "delete"].map((v) => `core secrets ${v}`),
  ...["list", "watch", "create", "patch"].map((v) => `core configmaps ${v}`),
  "events.k8s.io events create",
  "events.k8s.io events patch",
];

/** Cluster-scoped reads, in every install: who is granted the default credentials. */
const grantReads = [
  ...["list", "watch"].map((v) => `neoncloud.dev credentialsgrants ${v}`),
  ...["list", "watch"].map((v) => `core namespaces ${v}`),
];

/** Secure metrics: the two reviews (cluster-scoped APIs). */
const metricsAuth = [
  "authentication.k8s.io tokenreviews create",
  "authorization.k8s.io subjectaccessreviews create",
];

/** In the operator's own namespace: its Lease and its installation id. */
const ownNamespace = [
  ...["get", "create", "update"].map((v) => `coordination.k8s.io leases ${v}`),
  "core configmaps get neon-cloud-operator-identity",
  "core configmaps create",
];

const sorted = (...lists: string[][]) => [...new Set(lists.flat())].sort();

interface Install {
  manifests: Manifest[];
  operator: { namespace: string; name: string };
  /** What the operator's ServiceAccount may do, by scope ("cluster" or a namespace). */
  expected: Record<string, string[]>;
  /** The name prefix of its cluster-scoped objects. */
  prefix: string;
}

let installs: Record<string, Install>;

beforeAll(async () => {
  await deployTools();
  const admin = (await installDocSteps()).get("namespaced-admin");
  if (!admin) throw new Error("docs/install.md has no step namespaced-admin");
  const operator = { namespace: "neon-cloud-operator", name: "neon-cloud-operator" };
  const allNamespaces = {
    cluster: sorted(watched, grantReads, metricsAuth),
    "neon-cloud-operator": sorted(ownNamespace),
  };
  installs = {
    "deploy/base": {
      manifests: await kustomize("deploy/base"),
      operator,
      expected: allNamespaces,
      prefix: "neon-cloud-operator",
    },
    "deploy/namespaced (with deploy/cluster and the administrator's bindings)": {
      manifests: await namespacedInstall(admin.script, "team-a"),
      operator: { namespace: "team-a", name: "neon-cloud-operator" },
      expected: { cluster: sorted(grantReads, metricsAuth), "team-a": sorted(watched, ownNamespace) },
      prefix: "neon-cloud-operator",
    },
    "the chart's defaults": {
      manifests: await helmTemplate(),
      operator,
      expected: allNamespaces,
      prefix: "neon-cloud-operator",
    },
    "the chart watching one namespace": {
      manifests: await helmTemplate({ "watchNamespaces[0]": "default" }),
      operator,
      expected: {
        cluster: sorted(grantReads, metricsAuth),
        default: sorted(watched),
        "neon-cloud-operator": sorted(ownNamespace, [
          "core secrets get neon-api-key",
          "core secrets list neon-api-key",
          "core secrets watch neon-api-key",
        ]),
      },
      prefix: "neon-cloud-operator",
    },
  };
}, toolsTimeoutMs);

const names = [
  "deploy/base",
  "deploy/namespaced (with deploy/cluster and the administrator's bindings)",
  "the chart's defaults",
  "the chart watching one namespace",
];

describe.each(names)("%s", (name) => {
  const install = () => installs[name]!;
  const roles = () => install().manifests.filter((m) => ["ClusterRole", "Role"].includes(m.kind));

  test("the operator's ServiceAccount may do exactly what its controllers need, where they need it", () => {
    expect(effectiveGrants(install().manifests, install().operator)).toEqual(install().expected);
  });

  test("no rule grants a wildcard verb, resource or API group", () => {
    expect(roles().length).toBeGreaterThan(0);
    for (const role of roles()) {
      for (const rule of role.rules) {
        for (const field of ["verbs", "resources", "apiGroups", "resourceNames"]) {
          expect(rule[field] ?? [], `${role.kind} ${role.metadata.name} ${field}`).not.toContain("*");
        }
        if (!role.metadata.name.endsWith("-metrics-reader"))
          expect(rule.nonResourceURLs, `${role.kind} ${role.metadata.name}`).toBeUndefined();
      }
    }
  });

  test("every binding gives its role to the operator's ServiceAccount and nobody else", () => {
    const bindings = install().manifests.filter((m) =>
      ["ClusterRoleBinding", "RoleBinding"].includes(m.kind),
    );
    expect(bindings.length).toBeGreaterThan(0);
    for (const binding of bindings) {
      expect(binding.subjects).toEqual([{ kind: "ServiceAccount", ...install().operator }]);
    }
  });

  test("scrapers may be given get on /metrics, and nothing else, by a role bound to nobody", () => {
    const reader = find(install().manifests, "ClusterRole", `${install().prefix}-metrics-reader`);
    expect(reader.rules).toEqual([{ nonResourceURLs: ["/metrics"], verbs: ["get"] }]);
  });
});

/** The roles for people, by install: where they come from and their names' prefix. */
const withUserRoles = [
  "deploy/base",
  "deploy/namespaced (with deploy/cluster and the administrator's bindings)",
  "the chart's defaults",
];

const read = ["get", "list", "watch"];
const write = ["create", "update", "patch", "delete", "deletecollection"];
const userView = sorted(
  [...kinds, ...kinds.map((k) => `${k}/status`)].flatMap((r) => read.map((v) => `neoncloud.dev ${r} ${v}`)),
);
const userEdit = sorted(
  userView,
  kinds.flatMap((r) => write.map((v) => `neoncloud.dev ${r} ${v}`)),
);
const userAdmin = sorted(
  userEdit,
  [...read, ...write].map((v) => `neoncloud.dev credentialsgrants ${v}`),
);

describe.each(withUserRoles)("the roles for people of %s", (name) => {
  const role = (which: string) =>
    find(installs[name]!.manifests, "ClusterRole", `neon-cloud-operator-${which}`);

  test.each([
    ["view", userView],
    ["edit", userEdit],
    ["admin", userAdmin],
  ])(
    "%s is aggregated into Kubernetes' own role of that name, with exactly its grants",
    (which, expected) => {
      expect(role(which).metadata.labels?.[`rbac.authorization.k8s.io/aggregate-to-${which}`]).toBe("true");
      expect(grants(role(which).rules)).toEqual(expected);
    },
  );

  test("no role for people writes status or finalizers, or touches Secrets", () => {
    for (const which of ["view", "edit", "admin"]) {
      for (const grant of grants(role(which).rules)) {
        expect(grant, which).not.toMatch(/\/(status|finalizers) (create|update|patch|delete)/);
        expect(grant, which).not.toMatch(/ secrets /);
      }
    }
  });

  test("they are bound to nobody: Kubernetes' view, edit and admin carry them", () => {
    const bound = installs[name]!.manifests.filter((m) => m.kind.endsWith("Binding")).map(
      (b) => b.roleRef.name,
    );
    for (const which of ["view", "edit", "admin"])
      expect(bound).not.toContain(`neon-cloud-operator-${which}`);
  });
});

test("userRoles.create=false leaves the roles for people out of the chart", async () => {
  const names = findAll(await helmTemplate({ "userRoles.create": "false" }), "ClusterRole").map(
    (r) => r.metadata.name,
  );
  expect(names.filter((n) => /-(view|edit|admin)$/.test(n))).toEqual([]);
});

test("a chart watching several namespaces grants each of them, and nothing else", async () => {
  const manifests = await helmTemplate({ watchNamespaces: "{team-a,team-b}" });
  const operator = { namespace: "neon-cloud-operator", name: "neon-cloud-operator" };
  const all = effectiveGrants(manifests, operator);
  expect(Object.keys(all).sort()).toEqual(["cluster", "neon-cloud-operator", "team-a", "team-b"]);
  expect(all["team-a"]).toEqual(sorted(watched));
  expect(all["team-b"]).toEqual(sorted(watched));
});

test("a chart watching its own namespace needs no extra credentials Role", async () => {
  const manifests = await helmTemplate({ watchNamespaces: "{neon-cloud-operator}" });
  const operator = { namespace: "neon-cloud-operator", name: "neon-cloud-operator" };
  expect(effectiveGrants(manifests, operator)).toEqual({
    cluster: sorted(grantReads, metricsAuth),
    "neon-cloud-operator": sorted(watched, ownNamespace),
  });
});
