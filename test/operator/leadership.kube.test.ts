// A leader cut off from the API server without being killed: its lease renewals hang. At the renew
// deadline it must stop acting and exit (as controller-runtime's managers do), so that neither a
// renewal that succeeds late nor work already in flight lets two replicas act at once.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import { startApiProxy, type ApiProxy } from "../support/api-proxy.ts";
import { applyCredentialsSecret } from "../support/credentials.ts";
import { adminKubeConfig, createNamespace, eventually, kubectl } from "../support/kube.ts";
import { OperatorProcess, serviceAccountKubeconfigVia } from "../support/operator-process.ts";

let emulator: Emulator;
let proxy: ApiProxy;
let namespace: string;
let operator: OperatorProcess | undefined;

beforeAll(async () => {
  emulator = await startEmulator({ rateLimits: false });
  proxy = await startApiProxy(adminKubeConfig());
  namespace = await createNamespace("leadership");
  await applyCredentialsSecret(namespace, "neon-api-key", emulator.bootstrapKey);
});

afterAll(async () => {
  await operator?.kill();
  await proxy?.close();
  await emulator?.close();
  await kubectl(["delete", "namespace", namespace, "--wait=false"]).catch(() => undefined);
});

describe("leadership", () => {
  it("a leader whose renewals hang stops acting at the renew deadline and exits 1", async () => {
    const kubeconfig = await serviceAccountKubeconfigVia(proxy.url, namespace);
    const lines: string[] = [];
    operator = await OperatorProcess.start({
      kubeconfig,
      platformUrl: emulator.url,
      namespace,
      credentialsSecret: "neon-api-key",
      leaderElection: true,
      lines,
    });
    const holder = () =>
      kubectl([
        "get",
        "lease",
        "neon-cloud-operator",
        "-n",
        namespace,
        "-o",
        "jsonpath={.spec.holderIdentity}",
      ]).then(
        (out) => out.trim(),
        () => "",
      );
    await eventually(async () => ((await holder()).startsWith(operator!.name) ? true : undefined), {
      what: "the operator to hold the lease",
    });
    // Every request to the Lease from now on hangs, as on a half-dead connection.
    proxy.arm({ path: /\/leases\//, action: "hold" });
    expect(await operator.exitCode(40_000)).toBe(1);
    expect(lines.join("\n")).toContain("lost the leader lease");
    proxy.reset();
  });
});
