// Helpers for the suite on the one-node cluster (node.e2e.ts): kubectl with
// the node's admin kubeconfig, a kustomize overlay that points deploy/ at the
// locally built image and the emulator, and readers for pods and the Lease.
import { execFile } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import { promisify } from "node:util";
import { stringify } from "yaml";
import { credentialsSecretLabels } from "../../../src/controllers/managed/credentials.ts";
import type { NodeCluster } from "../../../scripts/node/cluster.ts";
import { eventually } from "../../support/kube.ts";
import { nodeHostPaths, network, processesOf } from "../../../scripts/node/host.ts";

const exec = promisify(execFile);
export const repoRoot = resolve(import.meta.dirname, "..", "..", "..");

export type Kubectl = (args: string[], input?: string) => Promise<string>;

export function kubectlFor(cluster: NodeCluster): Kubectl {
  return async (args, input) => {
    const child = exec(cluster.binaries.kubectl, [`--kubeconfig=${cluster.kubeconfig}`, ...args], {
      maxBuffer: 64 * 1024 * 1024,
    });
    if (input !== undefined) {
      child.child.stdin?.end(input);
    }
    return (await child).stdout;
  };
}

export const operatorImage = { name: "localhost/neon-cloud-operator", tag: "e2e" };

/**
 * An overlay of `base` (a folder of deploy/) in `dir`: the image just built,
 * and the platform URL of the emulator on the bridge, where pods reach it.
 */
export async function writeOverlay(dir: string, base: string, platformUrl: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const kustomization = {
    apiVersion: "kustomize.config.k8s.io/v1beta1",
    kind: "Kustomization",
    resources: [relative(dir, join(repoRoot, "deploy", base))],
    images: [
      {
        name: "ghcr.io/neon-cloud-operator/neon-cloud-operator",
        newName: operatorImage.name,
        newTag: operatorImage.tag,
      },
    ],
    patches: [
      {
        patch: stringify({
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "neon-cloud-operator", namespace: "neon-cloud-operator" },
          spec: {
            template: {
              spec: {
                containers: [
                  {
                    name: "operator",
                    env: [{ name: "NEON_OPERATOR_PLATFORM_BASE_URL", value: platformUrl }],
                  },
                ],
              },
            },
          },
        }),
      },
    ],
  };
  await writeFile(join(dir, "kustomization.yaml"), stringify(kustomization));
  return dir;
}

export interface Pod {
  metadata: { name: string; uid: string; deletionTimestamp?: string };
  status: {
    phase: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: {
      containerID?: string;
      restartCount: number;
      ready: boolean;
      lastState?: {
        terminated?: { exitCode: number; reason?: string; message?: string; finishedAt?: string };
      };
    }[];
  };
}

/**
 * Why a restarted pod's earlier container ended, for a failure message: its last termination
 * (exit code, reason, message) and the log it left (`kubectl logs --previous`), which is gone once
 * the pod is.
 */
export async function restartReport(kubectl: Kubectl, namespace: string, pods: Pod[]): Promise<string> {
  const parts: string[] = [];
  for (const pod of pods) {
    const status = pod.status.containerStatuses?.[0];
    if (!status || status.restartCount === 0) continue;
    const ended = status.lastState?.terminated;
    const previous = await kubectl(["-n", namespace, "logs", "--previous", pod.metadata.name]).catch(
      (err: unknown) => `(no previous log: ${String(err)})`,
    );
    parts.push(
      `pod ${pod.metadata.name}: ${status.restartCount} restart(s); last termination: ` +
        (ended
          ? `exit code ${ended.exitCode}, reason ${ended.reason ?? "-"}, message ${ended.message ?? "-"}, at ${ended.finishedAt ?? "-"}`
          : "not recorded") +
        `\nkubectl logs --previous ${pod.metadata.name}:\n${previous}`,
    );
  }
  return parts.join("\n\n");
}

export async function operatorPods(kubectl: Kubectl, namespace: string): Promise<Pod[]> {
  const list = JSON.parse(
    await kubectl([
      "-n",
      namespace,
      "get",
      "pods",
      "-l",
      "app.kubernetes.io/name=neon-cloud-operator",
      "-o",
      "json",
    ]),
  ) as { items: Pod[] };
  return list.items;
}

export const isReady = (pod: Pod) =>
  !pod.metadata.deletionTimestamp &&
  pod.status.conditions?.some((c) => c.type === "Ready" && c.status === "True");

export interface Lease {
  spec: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    leaseTransitions?: number;
    renewTime?: string;
  };
}

export async function lease(kubectl: Kubectl, namespace: string): Promise<Lease | undefined> {
  const out = await kubectl(["-n", namespace, "get", "lease", "neon-cloud-operator", "-o", "json"]).catch(
    () => undefined,
  );
  return out ? (JSON.parse(out) as Lease) : undefined;
}

/** What the node left on the host after down: processes, mounts, links, firewall tables, fixed paths. */
export async function nodeLeftovers(cluster: NodeCluster, hostPathsBefore: string[]): Promise<string[]> {
  const found: string[] = [];
  const b = cluster.binaries;
  const pids = await processesOf([b.kubelet, b.kubeProxy, b.kubeScheduler, b.containerd, b.controlplane]);
  if (pids.length > 0) found.push(`processes ${pids.join(" ")}`);
  const mounts = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((l) => l.split(" ")[4] ?? "")
    .filter(
      (p) => p.startsWith(cluster.dir) || p.startsWith("/run/netns/cni-") || p.startsWith("/var/lib/kubelet"),
    );
  if (mounts.length > 0) found.push(`mounts ${mounts.join(" ")}`);
  const links = readdirSync("/sys/class/net").filter((l) => l === network.bridge || l.startsWith("veth"));
  if (links.length > 0) found.push(`links ${links.join(" ")}`);
  const tables = (await exec("/usr/sbin/nft", ["list", "tables"])).stdout;
  if (/kube-proxy|neon-node/.test(tables)) found.push(`firewall tables: ${tables}`);
  const ruleset = (await exec("/usr/sbin/nft", ["list", "ruleset"])).stdout;
  if (/KUBE-/.test(ruleset)) found.push("KUBE-* chains in the firewall");
  for (const path of nodeHostPaths) {
    if (existsSync(path) && !hostPathsBefore.includes(path)) found.push(`path ${path}`);
  }
  if (existsSync(cluster.dir)) found.push(`state directory ${cluster.dir}`);
  for (const controller of readdirSync("/sys/fs/cgroup")) {
    if (existsSync(join("/sys/fs/cgroup", controller, "kubepods")))
      found.push(`cgroup ${controller}/kubepods`);
  }
  return found;
}

/** The Secret with the platform API key that deploy/ and the chart expect; applied from stdin, so the key is never in an argument. */
export async function applyCredentials(kubectl: Kubectl, namespace: string, apiKey: string): Promise<void> {
  await kubectl(
    ["apply", "--server-side", "-f", "-"],
    JSON.stringify({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "neon-api-key", namespace, labels: credentialsSecretLabels },
      stringData: { apiKey },
    }),
  );
}

/**
 * A one-shot pod from the operator's image (its node, no shell) running
 * `script` with `node -e`, locked down as the operator is. The repo's
 * node_modules is mounted read-only at /probe/node_modules, so the script can
 * require a client library (pg) the image does not ship. Returns its phase and
 * log; the pod is deleted whatever happens.
 */
export async function runProbePod(
  kubectl: Kubectl,
  options: { name: string; namespace: string; script: string; envFrom?: unknown[] },
): Promise<{ phase: string; log: string }> {
  const { name, namespace } = options;
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace },
    spec: {
      restartPolicy: "Never",
      automountServiceAccountToken: false,
      securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532 },
      containers: [
        {
          name: "probe",
          image: `${operatorImage.name}:${operatorImage.tag}`,
          imagePullPolicy: "Never",
          command: ["node", "-e", options.script],
          workingDir: "/probe",
          envFrom: options.envFrom ?? [],
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ["ALL"] },
          },
          volumeMounts: [{ name: "modules", mountPath: "/probe/node_modules", readOnly: true }],
        },
      ],
      volumes: [{ name: "modules", hostPath: { path: join(repoRoot, "node_modules"), type: "Directory" } }],
    },
  };
  await kubectl(["apply", "-f", "-"], JSON.stringify(pod));
  try {
    const phase = await eventually(
      async () => {
        const now = (
          await kubectl(["-n", namespace, "get", "pod", name, "-o", "jsonpath={.status.phase}"])
        ).trim();
        return now === "Succeeded" || now === "Failed" ? now : undefined;
      },
      { what: `pod ${namespace}/${name} to finish`, timeoutMs: 120_000, intervalMs: 500 },
    );
    const log = await kubectl(["-n", namespace, "logs", name]);
    return { phase, log };
  } finally {
    await kubectl(["-n", namespace, "delete", "pod", name, "--wait=false", "--ignore-not-found"]);
  }
}

/** Working set of each operator container in `namespace`, by pod name, from the kubelet's summary API. */
export async function workingSets(
  kubectl: Kubectl,
  nodeName: string,
  namespace: string,
): Promise<Map<string, number>> {
  const summary = JSON.parse(
    await kubectl(["get", "--raw", `/api/v1/nodes/${nodeName}/proxy/stats/summary`]),
  ) as {
    pods: {
      podRef: { name: string; namespace: string };
      containers?: { name: string; memory?: { workingSetBytes?: number } }[];
    }[];
  };
  return new Map(
    summary.pods
      .filter((p) => p.podRef.namespace === namespace)
      .map((p) => [
        p.podRef.name,
        p.containers?.find((c) => c.name === "operator")?.memory?.workingSetBytes ?? 0,
      ]),
  );
}

export const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
