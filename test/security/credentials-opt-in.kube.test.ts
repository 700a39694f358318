// The confused deputy of issue 23, replayed by a team member who cannot read
// Secrets: a ComputeEndpoint naming `spec.credentials: {secretName: app-tls,
// key: tls.key}`. The operator reads a Secret as platform credentials only when
// it carries neoncloud.dev/secret-type=api-key, so the TLS key is never read,
// never sent to the platform, and status tells a missing Secret, an unlabelled
// one and a missing key apart in no way. The operator runs in this process as a
// ServiceAccount through the API proxy, whose tap keeps what the server answered
// to the operator's Secret requests; a tap in front of the platform keeps the
// digests of the bearer tokens sent.
import { randomBytes } from "node:crypto";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { startOperator, type RunningOperator } from "../../src/operator.ts";
import { startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import { startApiProxy, type ApiProxy, type Tap } from "../support/api-proxy.ts";
import { startBearerTap, type BearerTap } from "../support/bearer-tap.ts";
import { applyCredentialsSecret } from "../support/credentials.ts";
import { adminKubeConfig, eventually, kubectl } from "../support/kube.ts";
import { namespacedUser, type NamespacedUser } from "../support/namespaced-user.ts";
import { LogCapture, testSeed } from "../support/operator.ts";
import { serviceAccountKubeconfigVia } from "../support/operator-process.ts";

interface Endpoint {
  status?: {
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}

let emulator: Emulator;
let platform: BearerTap;
let proxy: ApiProxy;
let secretAnswers: Tap;
let operator: RunningOperator;
let dev: NamespacedUser;
const logs = new LogCapture();
/** What app-tls holds: a TLS key the user may not read (a marker, not a real key). */
const tlsKey = `-----BEGIN PRIVATE KEY-----not-a-key-${randomBytes(12).toString("hex")}`;
const tlsCert = `-----BEGIN CERTIFICATE-----not-a-cert-${randomBytes(12).toString("hex")}`;
const base64 = (text: string) => Buffer.from(text).toString("base64");

const endpoint = (name: string, credentials: { secretName: string; key?: string }) => ({
  apiVersion: "neoncloud.dev/v1alpha1",
  kind: "ComputeEndpoint",
  metadata: { name },
  spec: { projectId: "proj-alpha", branchId: "br-dev", type: "read_only", credentials },
});

/** The endpoint's Ready condition as the user reads it, once it is `status` for `reason`. */
async function readyAs(name: string, status: string, reason?: string) {
  return eventually(
    async () => {
      const obj = JSON.parse(await dev.kubectl(["get", "computeendpoint", name, "-o", "json"])) as Endpoint;
      const ready = obj.status?.conditions?.find((c) => c.type === "Ready");
      return ready?.status === status && (reason === undefined || ready.reason === reason)
        ? { ready, status: obj.status }
        : undefined;
    },
    { what: `${name} Ready=${status}`, timeoutMs: 60_000, intervalMs: 200 },
  );
}

const notUsable = (secret: string, key: string) =>
  `Secret ${secret} in this namespace is not usable as platform credentials: it must exist, carry the ` +
  `label neoncloud.dev/secret-type=api-key and hold the key "${key}"`;

beforeAll(async () => {
  emulator = await startEmulator({ rateLimits: false, operationDurationMs: 150, seed: testSeed });
  platform = await startBearerTap(emulator.url);
  dev = await namespacedUser("team-b");
  const ns = dev.namespace;
  // The administrator's Secrets in the team's namespace: a TLS pair (server-side, as cert-manager
  // or `kubectl create secret tls` write it: no last-applied annotation copies it into its
  // metadata), and the team's key.
  await kubectl(["apply", "--server-side", "-n", ns, "-f", "-"], {
    input: JSON.stringify({
      apiVersion: "v1",
      kind: "Secret",
      type: "kubernetes.io/tls",
      metadata: { name: "app-tls" },
      stringData: { "tls.crt": tlsCert, "tls.key": tlsKey },
    }),
  });
  await applyCredentialsSecret(ns, "team-key", emulator.bootstrapKey);

  proxy = await startApiProxy(adminKubeConfig());
  secretAnswers = proxy.tap({ method: "GET", path: /\/secrets(\/|$)/ });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(await serviceAccountKubeconfigVia(proxy.url, ns));
  const config = loadConfig([
    `--platform-base-url=${platform.url}`,
    `--namespaces=${ns}`,
    // A namespaced install: the operator's own namespace (its identity ConfigMap) is the team's.
    `--leader-election-namespace=${ns}`,
    "--no-leader-election",
    "--metrics-address=127.0.0.1:0",
  ]);
  operator = await startOperator(config, logs.logger, { kubeConfig, pollIntervalMs: 100 });
});

afterAll(async () => {
  await operator?.stop();
  await proxy?.close();
  await platform?.close();
  await emulator?.close();
  if (dev) await kubectl(["delete", "namespace", dev.namespace, "--wait=false"]).catch(() => undefined);
});

describe("spec.credentials naming a Secret that is not marked as credentials", () => {
  it("the user cannot read app-tls, and can still name it", async () => {
    await expect(dev.kubectl(["get", "secret", "app-tls"])).rejects.toThrow(/forbidden/i);
    await dev.apply(endpoint("tls", { secretName: "app-tls", key: "tls.key" }));
    await dev.apply(endpoint("absent", { secretName: "no-such-secret", key: "tls.key" }));
    await dev.apply(endpoint("no-key", { secretName: "team-key", key: "tls.key" }));
    // A labelled Secret with the key works: the same user, the same operator.
    await dev.apply(endpoint("own-key", { secretName: "team-key" }));
  });

  it("a labelled Secret holding the key is used", async () => {
    await readyAs("own-key", "True");
    expect(platform.sent(emulator.bootstrapKey), "the tap sees the keys that are sent").toBe(true);
  });

  it("missing, unlabelled and key absent read the same: CredentialsNotFound, nothing about keys", async () => {
    const results = await Promise.all([
      readyAs("tls", "False", "CredentialsNotFound"),
      readyAs("absent", "False", "CredentialsNotFound"),
      readyAs("no-key", "False", "CredentialsNotFound"),
    ]);
    expect(results.map((r) => r.ready.message)).toEqual([
      notUsable("app-tls", "tls.key"),
      notUsable("no-such-secret", "tls.key"),
      notUsable("team-key", "tls.key"),
    ]);
    for (const { status } of results) {
      const text = JSON.stringify(status);
      for (const hint of ["tls.crt", "kubernetes.io/tls", "apiKey", tlsKey, tlsCert]) {
        expect(text).not.toContain(hint);
      }
    }
  });

  it("the TLS key never reached the platform, nor the operator", () => {
    expect(platform.sent(tlsKey)).toBe(false);
    // Never read by name, and the Secret watch answered metadata only.
    const reads = proxy.log.filter((e) => e.method === "GET" && e.path.endsWith("/secrets/app-tls"));
    expect(reads).toEqual([]);
    expect(secretAnswers.carried('"name":"app-tls"'), "the tap saw app-tls listed").toBe(true);
    for (const value of [tlsKey, tlsCert]) {
      expect(secretAnswers.carried(value)).toBe(false);
      expect(secretAnswers.carried(base64(value))).toBe(false);
    }
    expect(logs.text()).not.toContain(tlsKey);
  });
});
