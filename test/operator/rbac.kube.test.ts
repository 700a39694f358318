// The operator, authenticated as the ServiceAccount of deploy/ with exactly
// deploy/'s RBAC, runs the ComputeEndpoint and ApiKey scenarios: any missing
// permission leaves a resource short of Ready and fails this test.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { KubeConfig } from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import { startOperator, type RunningOperator } from "../../src/operator.ts";
import { PlatformClient } from "../../src/platform/index.ts";
import { loadConfig } from "../../src/config.ts";
import { createNamespace, eventually, kubectl, serviceAccountKubeconfig } from "../support/kube.ts";
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

let emulator: Emulator;
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
  await kubectl(["apply", "-f", "-"], {
    input: JSON.stringify({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "neon-api-key", namespace: operatorNamespace },
      stringData: { apiKey: emulator.bootstrapKey },
    }),
  });
  namespace = await createNamespace("rbac");

  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(await serviceAccountKubeconfig(operatorNamespace, "neon-cloud-operator"));
  const config = loadConfig([
    `--platform-base-url=${emulator.url}`,
    `--default-credentials-secret=${operatorNamespace}/neon-api-key`,
    `--leader-election-namespace=${operatorNamespace}`,
    "--leader-election-id=rbac-proof",
    `--namespaces=${namespace}`,
    "--metrics-address=127.0.0.1:0",
  ]);
  operator = await startOperator(config, logs.logger, { kubeConfig, pollIntervalMs: 100 });
});

afterAll(async () => {
  await operator?.stop();
  await emulator?.close();
  await kubectl(["delete", "namespace", namespace, "--wait=false"]).catch(() => undefined);
});

describe("the operator as deploy/'s ServiceAccount", () => {
  it("runs an ApiKey and a ComputeEndpoint that uses its key, then deletes both", async () => {
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
});
