// The real API server accepts what deploy/ and the chart install: every
// object valid against its schema (strict field validation), every RBAC
// grant allowed, in a namespace of the user's choosing (server-side dry run,
// so nothing is left behind and the shared server stays clean).
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { kubectl } from "../support/kube.ts";
import { deployTools, helmTemplateText, toolsTimeoutMs, withOverlay } from "./render.ts";

let namespace: string;
let watched: string;

beforeAll(async () => {
  await deployTools();
  const suffix = randomBytes(3).toString("hex");
  // The dry run creates nothing, so the namespaces the objects go into must exist.
  namespace = `deploy-${suffix}`;
  watched = `deploy-watched-${suffix}`;
  await kubectl(["create", "namespace", namespace]);
  await kubectl(["create", "namespace", watched]);
}, toolsTimeoutMs);

afterAll(async () => {
  await kubectl(["delete", "namespace", namespace, watched, "--wait=false"]);
});

async function dryRunApply(args: string[], input?: string): Promise<string> {
  return kubectl(["apply", "--dry-run=server", ...args], input === undefined ? {} : { input });
}

describe("kubectl apply -k", () => {
  test.each(["deploy/base", "deploy/namespaced"])("%s is accepted", async (folder) => {
    const out = await withOverlay({ resources: [folder], namespace }, (dir) => dryRunApply(["-k", dir]));
    expect(out).toContain(`deployment.apps/neon-cloud-operator created (server dry run)`);
    expect(out).toContain(`poddisruptionbudget.policy/neon-cloud-operator created (server dry run)`);
  });
});

describe("helm template | kubectl apply -f -", () => {
  test("the chart's defaults are accepted", async () => {
    const out = await dryRunApply(["-f", "-"], await helmTemplateText({}, "neon-cloud-operator", namespace));
    expect(out).toContain("clusterrole.rbac.authorization.k8s.io/neon-cloud-operator");
    expect(out).toContain("deployment.apps/neon-cloud-operator created (server dry run)");
  });

  test("the chart watching a namespace is accepted", async () => {
    const text = await helmTemplateText({ "watchNamespaces[0]": watched }, "neon-cloud-operator", namespace);
    const out = await dryRunApply(["-f", "-"], text);
    expect(out).toContain("role.rbac.authorization.k8s.io/neon-cloud-operator created (server dry run)");
    // Cluster-wide: only the reviews of secure metrics (cluster-scoped APIs) and the metrics reader.
    expect(
      out
        .split("\n")
        .filter((line) => line.startsWith("clusterrole"))
        .map((line) => line.split(" ")[0])
        .sort(),
    ).toEqual([
      "clusterrole.rbac.authorization.k8s.io/neon-cloud-operator-metrics-auth",
      "clusterrole.rbac.authorization.k8s.io/neon-cloud-operator-metrics-reader",
      "clusterrolebinding.rbac.authorization.k8s.io/neon-cloud-operator-metrics-auth",
    ]);
  });
});
