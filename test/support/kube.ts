// Helpers for tests that talk to the real control plane of the global setup.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { inject } from "vitest";
import { grantedLabel } from "./grant.ts";

const exec = promisify(execFile);

export function adminKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(inject("kubeconfig"));
  return kc;
}

/** Runs kubectl as the admin (or with another kubeconfig); rejects with kubectl's stderr. */
export async function kubectl(
  args: string[],
  options: { input?: string; kubeconfig?: string } = {},
): Promise<string> {
  const env = { ...process.env, KUBECONFIG: options.kubeconfig ?? inject("kubeconfig") };
  const child = exec(inject("kubectl"), args, { env });
  if (options.input !== undefined) {
    child.child.stdin?.end(options.input);
  }
  try {
    const { stdout } = await child;
    return stdout;
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? "";
    throw new Error(`kubectl ${args.join(" ")} failed: ${stderr.trim() || String(err)}`, { cause: err });
  }
}

/** A fresh namespace per test file keeps scenarios apart on the shared server. */
/** A new namespace; granted the operator's default credentials unless `granted` is false. */
export async function createNamespace(prefix: string, options: { granted?: boolean } = {}): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString("hex")}`;
  await kubectl(["create", "namespace", name]);
  if (options.granted !== false)
    await kubectl(["label", "namespace", name, `${grantedLabel}=default-credentials`]);
  return name;
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined> | T | undefined,
  { timeoutMs = 30_000, intervalMs = 100, what = "condition" } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`, { cause: lastError });
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

let minted = 0;

/** A kubeconfig for `user` in `groups`, with a client certificate signed by the control plane's CA. */
export async function userKubeconfig(user: string, groups: string[] = []): Promise<string> {
  const dir = inject("controlPlaneDir");
  const out = join(dir, `test-user-${process.pid}-${++minted}.kubeconfig`);
  const args = ["mint-user", "--dir", dir, "--user", user, "--out", out];
  for (const g of groups) args.push("--group", g);
  await exec(inject("controlPlaneBinary"), args);
  return out;
}

/** A kubeconfig that authenticates as a ServiceAccount, with a token from the TokenRequest API. */
export async function serviceAccountKubeconfig(namespace: string, name: string): Promise<string> {
  const admin = adminKubeConfig();
  const core = admin.makeApiClient(CoreV1Api);
  const request = await core.createNamespacedServiceAccountToken({
    namespace,
    name,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = request.status?.token;
  if (!token) throw new Error(`no token issued for ServiceAccount ${namespace}/${name}`);
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error("admin kubeconfig has no cluster");
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ ...cluster, name: "local" }],
    users: [{ name, token }],
    contexts: [{ name: "local", cluster: "local", user: name, namespace }],
    currentContext: "local",
  });
  const out = join(inject("controlPlaneDir"), `sa-${namespace}-${name}-${++minted}.kubeconfig`);
  await writeFile(out, kc.exportConfig(), { mode: 0o600 });
  return out;
}

/** What a test reads of an Event. */
export interface RecordedEvent {
  reason?: string;
  type?: string;
  message?: string;
  /** events.k8s.io/v1's name for the message. */
  note?: string;
}

/** The Events of a namespace that match a field selector (e.g. `involvedObject.name=web,type=Warning`). */
export async function eventsOf(namespace: string, fieldSelector: string): Promise<RecordedEvent[]> {
  const out = await kubectl([
    "get",
    "events",
    "-n",
    namespace,
    "--field-selector",
    fieldSelector,
    "-o",
    "json",
  ]);
  return (JSON.parse(out) as { items: RecordedEvent[] }).items;
}
