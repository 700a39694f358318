// An operator whose API server does not answer yet when it starts, as a pod whose first request
// goes out before the node's kube-proxy has the `kubernetes` Service in place: it stays up, alive
// and not ready, says what it waits for, and starts once the API server answers. Nothing listens
// on the kubeconfig's port at first; the test API proxy opens that port later.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../scripts/image/host.ts";
import { startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import { startApiProxy, type ApiProxy } from "../support/api-proxy.ts";
import { applyCredentialsSecret } from "../support/credentials.ts";
import { adminKubeConfig, createNamespace, eventually, kubectl } from "../support/kube.ts";
import { testSeed } from "../support/operator.ts";
import { OperatorProcess, serviceAccountKubeconfigVia } from "../support/operator-process.ts";

let emulator: Emulator;
let namespace: string;
let proxy: ApiProxy | undefined;
let operator: OperatorProcess | undefined;

beforeAll(async () => {
  emulator = await startEmulator({ rateLimits: false, operationDurationMs: 150, seed: testSeed });
  namespace = await createNamespace("op-startup");
  await applyCredentialsSecret(namespace, "neon-api-key", emulator.bootstrapKey);
});

afterAll(async () => {
  await operator?.kill();
  await proxy?.close();
  await emulator?.close();
  await kubectl(["delete", "namespace", namespace, "--wait=false"]).catch(() => undefined);
});

describe("an operator started before its API server answers", () => {
  it("waits with backoff, saying what for, and starts once the API server answers", async () => {
    const port = await freePort();
    const kubeconfig = await serviceAccountKubeconfigVia(`http://127.0.0.1:${port}`, namespace);
    operator = await OperatorProcess.spawn({
      kubeconfig,
      platformUrl: emulator.url,
      namespace,
      credentialsSecret: "neon-api-key",
      leaderElection: true,
    });
    const started = operator;
    // Connection refused, again and again: it says so and stays up.
    await eventually(
      () => {
        if (!started.running) throw new Error(`the operator exited:\n${started.lines.slice(-10).join("\n")}`);
        return started.lines.filter((l) => l.includes("waiting for the API server to answer")).length >= 3
          ? true
          : undefined;
      },
      { what: "three logged waits for the API server", timeoutMs: 30_000 },
    );
    expect(started.running).toBe(true);
    const wait = started.lines.find((l) => l.includes("waiting for the API server to answer"))!;
    expect(wait).toMatch(/ECONNREFUSED/);
    expect(wait).toMatch(/"retryInMs":\d+/);
    // Alive for a liveness probe, not ready.
    const health = await fetch(`${started.metricsUrl}/healthz`);
    expect(health.status).toBe(200);
    expect(await started.ready()).toBe(false);

    proxy = await startApiProxy(adminKubeConfig(), { port });
    await started.waitReady();
    expect(started.lines.some((l) => l.includes("the API server answered"))).toBe(true);
    expect(started.lines.some((l) => l.includes('"operator started"'))).toBe(true);
    // And it works: an ApiKey applied now becomes Ready.
    await kubectl(["apply", "-n", namespace, "-f", "-"], {
      input: JSON.stringify({
        apiVersion: "neoncloud.dev/v1alpha1",
        kind: "ApiKey",
        metadata: { name: "late" },
        spec: {},
      }),
    });
    await kubectl(["wait", "-n", namespace, "--for=condition=Ready", "--timeout=60s", "apikey/late"]);
    expect(started.running).toBe(true);
  });

  it("stops at once on SIGTERM while it waits", async () => {
    // A ServiceAccount of a namespace of its own: the first scenario's kubeconfig names another port.
    const other = await createNamespace("op-startup-stop");
    const port = await freePort();
    const kubeconfig = await serviceAccountKubeconfigVia(`http://127.0.0.1:${port}`, other);
    const waiting = await OperatorProcess.spawn({
      kubeconfig,
      platformUrl: emulator.url,
      namespace: other,
      credentialsSecret: "neon-api-key",
    });
    await eventually(
      () =>
        waiting.lines.some((l) => l.includes("waiting for the API server to answer")) ? true : undefined,
      { what: "a logged wait for the API server", timeoutMs: 30_000 },
    );
    const before = Date.now();
    await waiting.stop();
    expect(Date.now() - before).toBeLessThan(5_000);
    expect(await waiting.exitCode(1_000)).toBe(0);
    await kubectl(["delete", "namespace", other, "--wait=false"]);
  });
});
