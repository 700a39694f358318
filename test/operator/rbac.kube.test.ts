// The operator, authenticated as the ServiceAccount of deploy/ with exactly
// deploy/'s RBAC, runs the ApiKey, ComputeEndpoint, Branch, Snapshot and Project scenarios: any
// missing permission leaves a resource short of Ready and fails this test. Its
// requests go through the test's API proxy, which records each one's verb and
// resource: every verb granted must be one the operator used (or be in the
// table below of verbs the API server checks without a request of that verb).
import { execFile } from "node:child_process";
import { request } from "node:https";
import { join } from "node:path";
import { promisify } from "node:util";
import { KubeConfig } from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import { startOperator, type RunningOperator } from "../../src/operator.ts";
import { PlatformClient } from "../../src/platform/index.ts";
import { loadConfig } from "../../src/config.ts";
import { grantRules, identityRules, leaseRule, metricsAuthRules, operatorRules } from "../../src/api/rbac.ts";
import { applyCredentialsSecret } from "../support/credentials.ts";
import { startApiProxy, type ApiProxy, type ProxyLogEntry } from "../support/api-proxy.ts";
import {
  adminKubeConfig,
  createNamespace,
  eventually,
  kubectl,
  serviceAccountKubeconfig,
} from "../support/kube.ts";
import { LogCapture, testSeed } from "../support/operator.ts";

const exec = promisify(execFile);
const operatorNamespace = "neon-cloud-operator";
const rbacKinds = new Set([
  "Namespace",
  "ServiceAccount",
  "ClusterRole",
  "ClusterRoleBinding",
  "Role",
  "RoleBinding",
]);

/**
 * Granted verbs no request of the scenario carries, and why they are needed all the same. Each
 * is checked by the API server on a request of another verb, or used on a path this scenario
 * does not take.
 */
const grantedWithoutARequest: Record<string, string> = {
  "neoncloud.dev computeendpoints/finalizers update":
    "the OwnerReferencesPermissionEnforcement admission plugin checks it when the operator sets blockOwnerDeletion on the ConfigMap it owns",
  "neoncloud.dev apikeys/finalizers update": "the same, for the key Secret an ApiKey owns",
  "neoncloud.dev branches/finalizers update": "the same, for objects a Branch owns",
  "core secrets create":
    "a server-side apply (PATCH) that creates the key Secret is authorized as create as well as patch",
  "core configmaps create": "the same, for the connection ConfigMap",
  "neoncloud.dev computeendpoints get":
    "src/runtime/controller.ts reads an object by name when the cache still lags the operator's own write after 2 s",
  "neoncloud.dev apikeys get": "the same",
  "neoncloud.dev branches get": "the same",
  "events.k8s.io events patch": "src/runtime/events.ts aggregates a repeated Event into its count by a patch",
  "neoncloud.dev projects get": "the same",
  "neoncloud.dev projects/finalizers update": "the same as for the other kinds' finalizers",
  "neoncloud.dev snapshots get": "the same as for the other kinds' reads by name",
  "neoncloud.dev snapshots/finalizers update": "the same as for the other kinds' finalizers",
};

/** "group resource verb" of one request through the proxy, as RBAC sees it. */
function grantOf(entry: ProxyLogEntry): string | undefined {
  const parts = entry.path.split("/").filter(Boolean);
  let group: string;
  let rest: string[];
  if (parts[0] === "api") [group, rest] = ["core", parts.slice(2)];
  else if (parts[0] === "apis") [group, rest] = [parts[1] ?? "", parts.slice(3)];
  else return undefined;
  if (rest[0] === "namespaces" && rest.length > 2) rest = rest.slice(2);
  const [resource, name, subresource] = rest;
  if (!resource) return undefined;
  const verb =
    entry.method === "GET"
      ? name
        ? "get"
        : entry.watch
          ? "watch"
          : "list"
      : ({ POST: "create", PUT: "update", PATCH: "patch", DELETE: name ? "delete" : "deletecollection" }[
          entry.method
        ] ?? entry.method);
  return `${group} ${subresource ? `${resource}/${subresource}` : resource} ${verb}`;
}

const granted = [...operatorRules, ...grantRules, leaseRule, ...identityRules, ...metricsAuthRules].flatMap(
  (rule) =>
    rule.apiGroups.flatMap((g) =>
      rule.resources.flatMap((r) => rule.verbs.map((v) => `${g === "" ? "core" : g} ${r} ${v}`)),
    ),
);

let emulator: Emulator;
let proxy: ApiProxy;
let operator: RunningOperator;
let namespace: string;
const logs = new LogCapture();

interface Status {
  status?: {
    conditions?: { type: string; status: string; reason: string }[];
    keyId?: number;
    endpointId?: string;
  };
}

async function get(kind: string, name: string): Promise<Status> {
  return JSON.parse(await kubectl(["get", kind, name, "-n", namespace, "-o", "json"])) as Status;
}

async function ready(kind: string, name: string): Promise<Status> {
  return eventually(
    async () => {
      const obj = await get(kind, name);
      return obj.status?.conditions?.find((c) => c.type === "Ready")?.status === "True" ? obj : undefined;
    },
    { what: `${kind}/${name} Ready`, timeoutMs: 60_000, intervalMs: 250 },
  );
}

beforeAll(async () => {
  // Exactly the RBAC objects deploy/base renders.
  const rendered = await exec(inject("kubectl"), [
    "kustomize",
    join(import.meta.dirname, "..", "..", "deploy", "base"),
  ]);
  const rbac = parseAllDocuments(rendered.stdout)
    .map((d) => d.toJSON() as { kind: string })
    .filter((o) => rbacKinds.has(o.kind));
  expect(rbac.map((o) => o.kind)).toEqual(expect.arrayContaining(["ServiceAccount", "ClusterRole", "Role"]));
  await kubectl(["apply", "-f", "-"], { input: rbac.map((o) => JSON.stringify(o)).join("\n") });

  emulator = await startEmulator({ rateLimits: false, operationDurationMs: 150, seed: testSeed });
  await applyCredentialsSecret(operatorNamespace, "neon-api-key", emulator.bootstrapKey);
  namespace = await createNamespace("rbac");

  // The ServiceAccount's own token, through the proxy (plain HTTP on loopback; the proxy verifies
  // the API server's certificate).
  const serviceAccount = new KubeConfig();
  serviceAccount.loadFromFile(await serviceAccountKubeconfig(operatorNamespace, "neon-cloud-operator"));
  proxy = await startApiProxy(adminKubeConfig());
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: "proxy", server: proxy.url, skipTLSVerify: true }],
    users: [{ name: "operator", token: serviceAccount.getCurrentUser()?.token }],
    contexts: [{ name: "proxy", cluster: "proxy", user: "operator" }],
    currentContext: "proxy",
  });
  const config = loadConfig([
    `--platform-base-url=${emulator.url}`,
    `--default-credentials-secret=${operatorNamespace}/neon-api-key`,
    `--leader-election-namespace=${operatorNamespace}`,
    "--leader-election-id=rbac-proof",
    `--namespaces=${namespace}`,
    "--metrics-address=127.0.0.1:0",
    // As the chart and deploy/base run it: /metrics over HTTPS, scrapes reviewed.
    "--metrics-secure",
    "--metrics-secure-address=127.0.0.1:0",
  ]);
  operator = await startOperator(config, logs.logger, { kubeConfig, pollIntervalMs: 100 });
});

afterAll(async () => {
  await operator?.stop();
  await proxy?.close();
  await emulator?.close();
  await kubectl(["delete", "namespace", namespace, "--wait=false"]).catch(() => undefined);
  await kubectl(["delete", "clusterrolebinding", `${namespace}-scraper`, "--ignore-not-found"]).catch(
    () => undefined,
  );
});

/** A scrape of the operator's /metrics over HTTPS (its certificate is self-signed) with `token`. */
function scrape(token: string | undefined): Promise<{ status: number; body: string }> {
  const url = operator.manager.metricsUrl ?? "";
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { rejectUnauthorized: false, headers: token ? { authorization: `Bearer ${token}` } : {} },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

describe("the operator as deploy/'s ServiceAccount", () => {
  it("runs an ApiKey, then a ComputeEndpoint, a Branch, a Snapshot and a Project that use its key, then deletes them", async () => {
    expect(
      operator.manager.isActing || (await eventually(() => (operator.manager.isActing ? true : undefined))),
    ).toBe(true);
    await kubectl(["apply", "-n", namespace, "-f", "-"], {
      input: JSON.stringify({
        apiVersion: "neoncloud.dev/v1alpha1",
        kind: "ApiKey",
        metadata: { name: "team" },
        spec: {},
      }),
    });
    const key = await ready("apikey", "team");

    // Chaining: the endpoint acts with the key the ApiKey stored.
    await kubectl(["apply", "-n", namespace, "-f", "-"], {
      input: JSON.stringify({
        apiVersion: "neoncloud.dev/v1alpha1",
        kind: "ComputeEndpoint",
        metadata: { name: "app" },
        spec: {
          projectId: "proj-alpha",
          branchId: "br-dev",
          credentials: { secretName: "team-api-key" },
          connectionConfigMapName: "app-db",
        },
      }),
    });
    const endpoint = await ready("computeendpoint", "app");
    await eventually(
      async () =>
        (
          await kubectl(["get", "configmap", "app-db", "-n", namespace, "--ignore-not-found", "-o", "name"])
        ).trim() || undefined,
      { what: "the connection ConfigMap" },
    );
    const admin = new PlatformClient({ baseUrl: emulator.url, apiKey: emulator.bootstrapKey });
    const teamKey = (await admin.listApiKeys()).find((k) => k.id === key.status?.keyId);
    expect(teamKey?.lastUsedAt, "the endpoint was created with the ApiKey's key").toBeDefined();

    // Events were recorded under the ServiceAccount's permissions.
    const events = await kubectl(["get", "events", "-n", namespace, "-o", "json"]);
    expect(events).toContain("created endpoint");

    await kubectl(["apply", "-n", namespace, "-f", "-"], {
      input: JSON.stringify({
        apiVersion: "neoncloud.dev/v1alpha1",
        kind: "Branch",
        metadata: { name: "preview" },
        spec: { projectId: "proj-alpha", credentials: { secretName: "team-api-key" } },
      }),
    });
    const branch = await ready("branch", "preview");
    await kubectl(["delete", "branch", "preview", "-n", namespace, "--timeout=60s"]);
    expect((await admin.listBranches("proj-alpha")).map((b) => b.id)).not.toContain(
      (branch.status as { branchId?: string } | undefined)?.branchId,
    );

    // A snapshot of the project's root branch, taken with the namespace's key and deleted with
    // its resource (it took the snapshot, so the default deletionPolicy deletes it).
    const root = (await admin.listBranches("proj-alpha")).find((b) => b.default)!.id;
    await kubectl(["apply", "-n", namespace, "-f", "-"], {
      input: JSON.stringify({
        apiVersion: "neoncloud.dev/v1alpha1",
        kind: "Snapshot",
        metadata: { name: "nightly" },
        spec: { projectId: "proj-alpha", branchId: root, credentials: { secretName: "team-api-key" } },
      }),
    });
    const snapshot = await ready("snapshot", "nightly");
    const snapshotId = (snapshot.status as { snapshotId?: string } | undefined)?.snapshotId;
    expect(snapshotId).toBeDefined();
    await kubectl(["delete", "snapshot", "nightly", "-n", namespace, "--timeout=60s"]);
    expect((await admin.listSnapshots("proj-alpha")).map((s) => s.id)).not.toContain(snapshotId);

    // A project the namespace's own key creates (no grant needed for a key of its own namespace),
    // deleted with its resource because the spec says so.
    await kubectl(["apply", "-n", namespace, "-f", "-"], {
      input: JSON.stringify({
        apiVersion: "neoncloud.dev/v1alpha1",
        kind: "Project",
        metadata: { name: "tenant" },
        spec: { credentials: { secretName: "team-api-key" }, deletionPolicy: "Delete" },
      }),
    });
    const project = await ready("project", "tenant");
    const projectId = (project.status as { projectId?: string } | undefined)?.projectId;
    expect(projectId).toBeDefined();
    await kubectl(["delete", "project", "tenant", "-n", namespace, "--timeout=60s"]);
    expect((await admin.listProjects()).map((p) => p.id)).not.toContain(projectId);

    await kubectl(["delete", "computeendpoint", "app", "-n", namespace, "--timeout=60s"]);
    expect((await admin.listEndpoints("proj-alpha")).map((e) => e.id)).not.toContain(
      endpoint.status?.endpointId,
    );
    await kubectl(["delete", "apikey", "team", "-n", namespace, "--timeout=60s"]);
    expect((await admin.listApiKeys()).map((k) => k.id)).not.toContain(key.status?.keyId);
    await admin.close();

    expect(logs.text()).not.toMatch(/forbidden/i);
    expect(logs.text()).not.toContain(emulator.bootstrapKey);
  });

  it("serves /metrics over HTTPS only to a token allowed to get /metrics; probes stay plain HTTP", async () => {
    expect(operator.manager.metricsUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/metrics$/);
    for (const sa of ["scraper", "stranger"])
      await kubectl(["create", "serviceaccount", sa, "-n", namespace]);
    await kubectl([
      "create",
      "clusterrolebinding",
      `${namespace}-scraper`,
      "--clusterrole=neon-cloud-operator-metrics-reader",
      `--serviceaccount=${namespace}:scraper`,
    ]);
    const scraper = (await kubectl(["create", "token", "scraper", "-n", namespace])).trim();
    const stranger = (await kubectl(["create", "token", "stranger", "-n", namespace])).trim();

    expect((await scrape(undefined)).status, "no token").toBe(401);
    expect((await scrape("not-a-token")).status, "a token the API server does not know").toBe(401);
    const refused = await scrape(stranger);
    expect(refused.status, "a ServiceAccount without the metrics-reader role").toBe(403);
    expect(refused.body).toContain(`system:serviceaccount:${namespace}:stranger may not get /metrics`);
    const allowed = await scrape(scraper);
    expect(allowed.status, "a ServiceAccount with the metrics-reader role").toBe(200);
    expect(allowed.body).toContain("# TYPE neon_cloud_operator_");

    // Answers are reused: more scrapes with the same tokens review nothing again.
    const reviews = () =>
      proxy.log.filter((e) => /\/(tokenreviews|subjectaccessreviews)$/.test(e.path)).length;
    const before = reviews();
    for (let i = 0; i < 5; i++) {
      expect((await scrape(scraper)).status).toBe(200);
      expect((await scrape(stranger)).status).toBe(403);
    }
    expect(reviews()).toBe(before);

    // The kubelet's probes stay plain HTTP, and /metrics is not served there.
    const probes = operator.manager.serverUrl ?? "";
    expect(probes).toMatch(/^http:\/\//);
    expect((await fetch(`${probes}/healthz`)).status).toBe(200);
    expect((await fetch(`${probes}/readyz`)).status).toBe(200);
    expect((await fetch(`${probes}/metrics`)).status).toBe(404);
    expect(logs.text()).not.toContain(scraper);
    expect(logs.text()).not.toContain(stranger);
  });

  it("uses every verb it is granted, and nothing else", async () => {
    await operator.stop(); // its release of the Lease is part of what it does
    const used = new Set(proxy.log.map(grantOf).filter((g) => g !== undefined));
    const refused = proxy.log.filter((e) => e.status === 403).map((e) => `${e.method} ${e.path}`);
    expect(refused, "requests the API server refused").toEqual([]);
    expect([...used].filter((g) => !granted.includes(g)).sort(), "used without a grant").toEqual([]);
    expect(
      granted.filter((g) => !used.has(g) && !(g in grantedWithoutARequest)).sort(),
      "granted, never used, and not in the table of verbs checked without a request",
    ).toEqual([]);
    for (const g of Object.keys(grantedWithoutARequest)) expect(granted, g).toContain(g);
  });
});
