// The real API server accepts what deploy/ and the chart install: every object valid against its
// schema (strict field validation), every RBAC grant allowed, the NetworkPolicy too, in a
// namespace of the user's choosing (server-side dry run, so nothing cluster-wide is left behind
// and the shared server stays clean). And deploy/namespaced is what its pitch says: a team that
// holds only Kubernetes' admin role in its namespace can apply it, for real.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { kubectl } from "../support/kube.ts";
import { deployTools, helmTemplateText, repoRoot, toolsTimeoutMs, withOverlay } from "./render.ts";

let namespace: string;
let watched: string;
let team: string;

beforeAll(async () => {
  await deployTools();
  const suffix = randomBytes(3).toString("hex");
  // The dry run creates nothing, so the namespaces the objects go into must exist.
  namespace = `deploy-${suffix}`;
  watched = `deploy-watched-${suffix}`;
  team = `deploy-team-${suffix}`;
  await kubectl(["create", "namespace", namespace]);
  await kubectl(["create", "namespace", watched]);
  await kubectl(["create", "namespace", team]);
}, toolsTimeoutMs);

afterAll(async () => {
  await kubectl(["delete", "namespace", namespace, watched, team, "--wait=false"]);
});

async function dryRunApply(args: string[], input?: string): Promise<string> {
  return kubectl(["apply", "--dry-run=server", ...args], input === undefined ? {} : { input });
}

/** The kinds/names of an apply's output lines, e.g. "networkpolicy.networking.k8s.io/neon-cloud-operator". */
const applied = (out: string) =>
  out
    .split("\n")
    .filter(Boolean)
    .map((line) => line.split(" ")[0] ?? "");

describe("kubectl apply -k", () => {
  test("deploy/base is accepted, its NetworkPolicy and the roles for people too", async () => {
    const out = await withOverlay({ resources: ["deploy/base"], namespace }, (dir) =>
      dryRunApply(["-k", dir]),
    );
    expect(out).toContain("deployment.apps/neon-cloud-operator created (server dry run)");
    expect(applied(out)).toEqual(
      expect.arrayContaining([
        "poddisruptionbudget.policy/neon-cloud-operator",
        "networkpolicy.networking.k8s.io/neon-cloud-operator",
        "clusterrole.rbac.authorization.k8s.io/neon-cloud-operator-edit",
        "clusterrolebinding.rbac.authorization.k8s.io/neon-cloud-operator-grants",
      ]),
    );
  });

  test("deploy/cluster holds only cluster-scoped objects", async () => {
    const out = await dryRunApply(["-k", join(repoRoot, "deploy", "cluster")]);
    for (const object of applied(out)) expect(object).toMatch(/^(customresourcedefinition|clusterrole)\./);
  });

  test("deploy/namespaced is accepted in a namespace of the user's choosing, with nothing cluster-wide", async () => {
    const out = await withOverlay({ resources: ["deploy/namespaced"], namespace }, (dir) =>
      dryRunApply(["-k", dir]),
    );
    expect(applied(out).sort()).toEqual([
      "deployment.apps/neon-cloud-operator",
      "networkpolicy.networking.k8s.io/neon-cloud-operator",
      "poddisruptionbudget.policy/neon-cloud-operator",
      "role.rbac.authorization.k8s.io/neon-cloud-operator-identity",
      "role.rbac.authorization.k8s.io/neon-cloud-operator-leader-election",
      "rolebinding.rbac.authorization.k8s.io/neon-cloud-operator-identity",
      "rolebinding.rbac.authorization.k8s.io/neon-cloud-operator-leader-election",
      "service/neon-cloud-operator-metrics",
      "serviceaccount/neon-cloud-operator",
    ]);
  });
});

describe("a team holding only admin in its namespace", () => {
  const user = "team-lead";

  beforeAll(async () => {
    // deploy/cluster's ClusterRoles, as a cluster administrator installs them (cluster-scoped, the
    // same content whoever applies them), so the binding below names a role that exists.
    await kubectl(["apply", "-f", join(repoRoot, "deploy", "cluster", "operator-roles.yaml")]);
    await kubectl(["-n", team, "create", "rolebinding", user, "--clusterrole=admin", `--user=${user}`]);
  });

  test("applies deploy/namespaced there, for real", async () => {
    const out = await withOverlay({ resources: ["deploy/namespaced"], namespace: team }, (dir) =>
      kubectl([`--as=${user}`, "apply", "-k", dir]),
    );
    expect(out).toContain("deployment.apps/neon-cloud-operator created");
    expect(out).toContain(
      "rolebinding.rbac.authorization.k8s.io/neon-cloud-operator-leader-election created",
    );
  });

  test("cannot bind the operator's rules itself: they write status, which no user role may", async () => {
    await expect(
      kubectl([
        `--as=${user}`,
        "-n",
        team,
        "create",
        "rolebinding",
        "neon-cloud-operator",
        "--clusterrole=neon-cloud-operator",
        `--serviceaccount=${team}:neon-cloud-operator`,
      ]),
    ).rejects.toThrow(/forbidden.*(escalat|not currently held)/is);
  });
});

describe("helm template | kubectl apply -f -", () => {
  test("the chart's defaults are accepted", async () => {
    const out = await dryRunApply(["-f", "-"], await helmTemplateText({}, "neon-cloud-operator", namespace));
    expect(out).toContain("clusterrole.rbac.authorization.k8s.io/neon-cloud-operator");
    expect(out).toContain("deployment.apps/neon-cloud-operator created (server dry run)");
    expect(out).toContain("networkpolicy.networking.k8s.io/neon-cloud-operator created (server dry run)");
  });

  test("the chart with every optional value it can render without other CRDs is accepted", async () => {
    const text = await helmTemplateText(
      {
        replicaCount: "1",
        "extraArgs[0]": "--resync-period=30m",
        "extraEnv[0].name": "NEON_OPERATOR_POLL_INTERVAL",
        "extraEnv[0].value": "2s",
        "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.name": "monitoring",
        "networkPolicy.httpsTo[0].ipBlock.cidr": "10.0.0.0/8",
        "dashboard.enabled": "true",
      },
      "neon-cloud-operator",
      namespace,
    );
    expect(await dryRunApply(["-f", "-"], text)).toContain(
      "deployment.apps/neon-cloud-operator created (server dry run)",
    );
  });

  test("the chart watching a namespace is accepted, with only the cluster-scoped reads cluster-wide", async () => {
    const text = await helmTemplateText({ "watchNamespaces[0]": watched }, "neon-cloud-operator", namespace);
    const out = await dryRunApply(["-f", "-"], text);
    expect(out).toContain("role.rbac.authorization.k8s.io/neon-cloud-operator created (server dry run)");
    expect(
      applied(out)
        .filter((line) => line.startsWith("clusterrolebinding"))
        .sort(),
    ).toEqual([
      "clusterrolebinding.rbac.authorization.k8s.io/neon-cloud-operator-grants",
      "clusterrolebinding.rbac.authorization.k8s.io/neon-cloud-operator-metrics-auth",
    ]);
  });
});
