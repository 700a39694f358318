// The operator as a process of its own: Ready through /readyz, reconciling
// through the API proxy, gone at once on SIGKILL, every line it wrote kept.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import { startApiProxy, type ApiProxy } from "./api-proxy.ts";
import { applyCredentialsSecret } from "./credentials.ts";
import { adminKubeConfig, createNamespace, eventually, kubectl } from "./kube.ts";
import { testSeed } from "./operator.ts";
import { OperatorProcess, serviceAccountKubeconfigVia } from "./operator-process.ts";

let proxy: ApiProxy;
let emulator: Emulator;
let namespace: string;
let kubeconfig: string;

beforeAll(async () => {
  proxy = await startApiProxy(adminKubeConfig());
  emulator = await startEmulator({ rateLimits: false, operationDurationMs: 150, seed: testSeed });
  namespace = await createNamespace("op-process");
  kubeconfig = await serviceAccountKubeconfigVia(proxy.url, namespace);
  await applyCredentialsSecret(namespace, "neon-api-key", emulator.bootstrapKey);
});

afterAll(async () => {
  await proxy?.close();
  await emulator?.close();
  await kubectl(["delete", "namespace", namespace, "--wait=false"]).catch(() => undefined);
});

describe("an operator process", () => {
  it("becomes Ready, reconciles through the proxy, and is gone at once on SIGKILL", async () => {
    const operator = await OperatorProcess.start({
      kubeconfig,
      platformUrl: emulator.url,
      namespace,
      credentialsSecret: "neon-api-key",
    });
    expect(operator.running).toBe(true);
    await kubectl(["apply", "-n", namespace, "-f", "-"], {
      input: JSON.stringify({
        apiVersion: "neoncloud.dev/v1alpha1",
        kind: "ApiKey",
        metadata: { name: "svc" },
        spec: {},
      }),
    });
    await eventually(
      async () => {
        const obj = JSON.parse(await kubectl(["get", "apikey", "svc", "-n", namespace, "-o", "json"])) as {
          status?: { conditions?: { type: string; status: string }[] };
        };
        return obj.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
          ? true
          : undefined;
      },
      { what: "the ApiKey Ready" },
    );
    // Its writes went through the proxy, with its own identity.
    expect(proxy.log.some((e) => e.method === "PATCH" && e.path.endsWith("/apikeys/svc/status"))).toBe(true);
    expect(operator.lines.some((l) => l.includes('"operator started"'))).toBe(true);

    await operator.kill();
    expect(operator.running).toBe(false);
    await expect(fetch(`${operator.metricsUrl}/readyz`)).rejects.toThrow();
  });

  it("reports a process that exits before it is Ready, with its last words", async () => {
    const refused = OperatorProcess.start({
      kubeconfig,
      platformUrl: emulator.url,
      namespace,
      credentialsSecret: "neon-api-key",
      pollInterval: "soon",
    });
    await expect(refused).rejects.toThrow(/did not become ready[^]*--poll-interval = "soon"/);
  });
});
