// The operator as its users deploy it, on a real node: the image built from
// the Dockerfile (`npm run image`) imported into the node's containerd,
// deploy/base applied with kubectl, two pods on kubelet + runc + CNI bridge,
// talking to the API server through the kubernetes Service and to the
// emulator on the pod bridge. Resources are driven with kubectl; what counts
// is what the platform (the emulator) ends up holding.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { output } from "../../../scripts/image/host.ts";
import { buildImage } from "../../../scripts/image/main.ts";
import { importImage, nodeDown, nodeUp, type NodeCluster } from "../../../scripts/node/cluster.ts";
import { existingHostPaths } from "../../../scripts/node/host.ts";
import { PlatformClient } from "../../../src/platform/index.ts";
import { startEmulator, type Emulator } from "../../../tools/emulator/index.ts";
import { buildHelm } from "../../support/helm.ts";
import { testSeed } from "../../support/operator.ts";
import { eventually } from "../../support/kube.ts";
import {
  isReady,
  kubectlFor,
  lease,
  nodeLeftovers,
  operatorImage,
  operatorPods,
  repoRoot,
  writeOverlay,
  type Kubectl,
} from "./support.ts";

const operatorNamespace = "neon-cloud-operator";
const workNamespace = "e2e";
let cluster: NodeCluster | undefined;
let emulator: Emulator;
let platform: PlatformClient;
let kubectl: Kubectl;
let work: string;
let hostPathsBefore: string[];

beforeAll(async () => {
  hostPathsBefore = existingHostPaths();
  work = await mkdtemp(join(tmpdir(), "neon-node-e2e-"));
  cluster = await nodeUp();
  const archive = join(work, "operator.oci.tar");
  const image = await buildImage({ tag: `${operatorImage.name}:${operatorImage.tag}`, ociArchive: archive });
  process.stdout.write(
    `image ${image.tag}: ${(image.size / 1e6).toFixed(1)} MB, ${image.seconds.toFixed(1)} s\n`,
  );
  await importImage(cluster, archive);
  emulator = await startEmulator({
    host: cluster.address,
    seed: testSeed,
    rateLimits: false,
    operationDurationMs: 150,
  });
  platform = new PlatformClient({ baseUrl: emulator.url, apiKey: emulator.bootstrapKey });
  kubectl = kubectlFor(cluster);
});

afterAll(async () => {
  await emulator?.close();
  if (cluster) {
    await nodeDown();
    expect(await nodeLeftovers(cluster, hostPathsBefore)).toEqual([]);
  }
  if (work) await rm(work, { recursive: true, force: true });
});

const computeEndpoint = (name: string, branchId: string, type = "read_only", namespace = workNamespace) =>
  JSON.stringify({
    apiVersion: "neoncloud.dev/v1alpha1",
    kind: "ComputeEndpoint",
    metadata: { name, namespace },
    spec: { projectId: "proj-alpha", branchId, type, computeUnits: { min: 0.25, max: 1 } },
  });

const waitReady = (kind: string, names: string[], namespace = workNamespace) =>
  kubectl([
    "-n",
    namespace,
    "wait",
    "--for=condition=Ready",
    "--timeout=120s",
    ...names.map((n) => `${kind}/${n}`),
  ]);

const endpointIds = async (names: string[]) =>
  Promise.all(
    names.map(async (n) =>
      (
        await kubectl([
          "-n",
          workNamespace,
          "get",
          "computeendpoint",
          n,
          "-o",
          "jsonpath={.status.endpointId}",
        ])
      ).trim(),
    ),
  );

/** Waits until the platform no longer holds what a deleted resource stood for. */
const gone = (what: string, check: () => Promise<boolean>) =>
  eventually(async () => ((await check()) ? true : undefined), {
    what: `${what} gone from the platform`,
    timeoutMs: 30_000,
    intervalMs: 250,
  });

/** The endpoints the platform holds on a branch. */
const onBranch = async (branchId: string) =>
  (await platform.listEndpoints("proj-alpha")).filter((e) => e.branchId === branchId).map((e) => e.id);

/** The pod holding the Lease once both pods are Ready and a holder renews it. */
async function leader(namespace = operatorNamespace): Promise<string> {
  return eventually(
    async () => {
      const pods = await operatorPods(kubectl, namespace);
      const holder = (await lease(kubectl, namespace))?.spec.holderIdentity;
      const ready = pods.filter(isReady).map((p) => p.metadata.name);
      // The operator's identity is "<pod name>_<random suffix>": a new process in the same pod is a new holder.
      const pod = ready.find((name) => holder?.startsWith(`${name}_`));
      return ready.length === 2 && pod ? pod : undefined;
    },
    { what: "two Ready pods and one of them holding the Lease", timeoutMs: 120_000, intervalMs: 500 },
  );
}

/** Applies read-only endpoints on `branchId`, disrupts the leader while they are created, checks the platform. */
async function endpointsThrough(
  branchId: string,
  prefix: string,
  disrupt: (leader: string) => Promise<void>,
  namespace = operatorNamespace,
) {
  const names = Array.from({ length: 6 }, (_, i) => `${prefix}-${i}`);
  const before = await leader(namespace);
  await kubectl(["apply", "-f", "-"], names.map((n) => computeEndpoint(n, branchId)).join("\n---\n"));
  await disrupt(before);
  await waitReady("computeendpoint", names);
  const ids = await endpointIds(names);
  // One platform endpoint per resource: none created twice, none lost.
  expect(new Set(ids).size).toBe(names.length);
  expect((await onBranch(branchId)).sort()).toEqual([...ids].sort());
  await leader(namespace);
  await kubectl(["-n", workNamespace, "delete", "computeendpoint", ...names, "--timeout=120s"]);
  await gone(`the endpoints on ${branchId}`, async () => (await onBranch(branchId)).length === 0);
}

describe("deploy/base on a real node", () => {
  it("runs two pods from the image, Ready with probes passing, exactly one holding the Lease", async () => {
    const overlay = await writeOverlay(join(work, "base"), "base", emulator.url);
    await kubectl(["apply", "-k", overlay]);
    await kubectl([
      "-n",
      operatorNamespace,
      "create",
      "secret",
      "generic",
      "neon-api-key",
      `--from-literal=apiKey=${emulator.bootstrapKey}`,
    ]);
    await kubectl(["create", "namespace", workNamespace]);
    await kubectl([
      "-n",
      operatorNamespace,
      "rollout",
      "status",
      "deployment/neon-cloud-operator",
      "--timeout=180s",
    ]);
    const holder = await leader();
    const pods = await operatorPods(kubectl, operatorNamespace);
    expect(pods.map((p) => p.metadata.name)).toContain(holder);
    // Probes pass: both Ready, neither restarted by its liveness probe.
    expect(pods.every((p) => p.status.containerStatuses?.[0]?.restartCount === 0)).toBe(true);
  });

  it("creates and deletes a ComputeEndpoint and an ApiKey driven by kubectl", async () => {
    await kubectl(["apply", "-f", "-"], computeEndpoint("web", "br-dev"));
    await waitReady("computeendpoint", ["web"]);
    const [id] = await endpointIds(["web"]);
    expect(await onBranch("br-dev")).toContain(id);

    await kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "neoncloud.dev/v1alpha1",
        kind: "ApiKey",
        metadata: { name: "ci", namespace: workNamespace },
        spec: {},
      }),
    );
    await waitReady("apikey", ["ci"]);
    const keyId = Number(
      (await kubectl(["-n", workNamespace, "get", "apikey", "ci", "-o", "jsonpath={.status.keyId}"])).trim(),
    );
    const listed = async () => (await platform.listApiKeys()).find((k) => k.id === keyId);
    expect(await listed()).toBeDefined();
    // The key's value lives in its Secret, never in the status.
    const secret = JSON.parse(
      await kubectl(["-n", workNamespace, "get", "secret", "ci-api-key", "-o", "json"]),
    ) as {
      data: { apiKey: string };
    };
    expect(Buffer.from(secret.data.apiKey, "base64").toString().length).toBeGreaterThan(0);

    await kubectl(["-n", workNamespace, "delete", "computeendpoint/web", "apikey/ci", "--timeout=120s"]);
    await gone("the endpoint", async () => !(await onBranch("br-dev")).includes(id ?? ""));
    await gone("the key", async () => (await listed()) === undefined);
  });

  it("stays under its memory limit, by the kubelet's own figures; Node sizes its heap from the cgroup", async () => {
    const summary = JSON.parse(
      await kubectl(["get", "--raw", `/api/v1/nodes/${cluster!.nodeName}/proxy/stats/summary`]),
    ) as {
      pods: {
        podRef: { name: string; namespace: string };
        containers?: { name: string; memory?: { workingSetBytes?: number } }[];
      }[];
    };
    const pods = summary.pods.filter((p) => p.podRef.namespace === operatorNamespace);
    expect(pods).toHaveLength(2);
    const limit = 256 * 2 ** 20; // deploy/base's memory limit
    for (const pod of pods) {
      const workingSet = pod.containers?.find((c) => c.name === "operator")?.memory?.workingSetBytes ?? 0;
      process.stdout.write(`${pod.podRef.name}: working set ${(workingSet / 2 ** 20).toFixed(1)} MiB\n`);
      expect(workingSet).toBeGreaterThan(0);
      expect(workingSet).toBeLessThan(limit);
    }
    const [name] = pods.map((p) => p.podRef.name);
    const figures = JSON.parse(
      await kubectl([
        "-n",
        operatorNamespace,
        "exec",
        name ?? "",
        "--",
        "node",
        "-p",
        "JSON.stringify({ limit: process.constrainedMemory(), heap: v8.getHeapStatistics().heap_size_limit })",
      ]),
    ) as { limit: number; heap: number };
    process.stdout.write(
      `in the pod: cgroup limit ${(figures.limit / 2 ** 20).toFixed(0)} MiB, heap limit ${(figures.heap / 2 ** 20).toFixed(0)} MiB\n`,
    );
    expect(figures.limit).toBe(limit);
  });

  it("hands over when the leading pod is deleted mid-work: nothing duplicated or lost", async () => {
    await endpointsThrough("br-staging", "handover", async (holder) => {
      await kubectl(["-n", operatorNamespace, "delete", "pod", holder, "--wait=false"]);
      // The standby takes the Lease the deleted pod released.
      await eventually(
        async () => {
          const now = (await lease(kubectl, operatorNamespace))?.spec.holderIdentity;
          return now && !now.startsWith(`${holder}_`) ? now : undefined;
        },
        { what: "a new Lease holder", timeoutMs: 60_000, intervalMs: 250 },
      );
    });
  });

  it("recovers when the leading pod's container is killed with SIGKILL mid-work: nothing duplicated or lost", async () => {
    await endpointsThrough("br-feature", "killed", async (holder) => {
      const pod = (await operatorPods(kubectl, operatorNamespace)).find((p) => p.metadata.name === holder);
      const containerId = pod?.status.containerStatuses?.[0]?.containerID?.replace(/^containerd:\/\//, "");
      expect(containerId).toBeTruthy();
      await output(cluster!.binaries.ctr, [
        "--address",
        cluster!.containerdSocket,
        "--namespace",
        "k8s.io",
        "tasks",
        "kill",
        "--signal",
        "SIGKILL",
        containerId ?? "",
      ]);
      // kubelet restarts the container; the Lease goes to whichever process renews it first.
      await eventually(
        async () => {
          const restarted = (await operatorPods(kubectl, operatorNamespace)).find(
            (p) => p.metadata.name === holder,
          );
          return (restarted?.status.containerStatuses?.[0]?.restartCount ?? 0) > 0 ? true : undefined;
        },
        { what: "kubelet restarting the killed container", timeoutMs: 60_000, intervalMs: 250 },
      );
    });
  });
});

/** One endpoint's whole life through the operator in its pods: apply, Ready, on the platform; delete, gone. */
async function endpointLifecycle(name: string, branchId: string, namespace: string) {
  await kubectl(["apply", "-f", "-"], computeEndpoint(name, branchId, "read_only", namespace));
  await waitReady("computeendpoint", [name], namespace);
  const id = (
    await kubectl(["-n", namespace, "get", "computeendpoint", name, "-o", "jsonpath={.status.endpointId}"])
  ).trim();
  expect(await onBranch(branchId)).toContain(id);
  await kubectl(["-n", namespace, "delete", "computeendpoint", name, "--timeout=120s"]);
  await gone("the endpoint", async () => !(await onBranch(branchId)).includes(id));
}

describe("deploy/namespaced on a real node", () => {
  it("replaces deploy/base: watches only its namespace, with no cluster-wide grants", async () => {
    await kubectl(["delete", "-k", join(work, "base"), "--wait", "--timeout=180s"]);
    const overlay = await writeOverlay(join(work, "namespaced"), "namespaced", emulator.url);
    await kubectl(["apply", "-k", overlay]);
    await kubectl([
      "-n",
      operatorNamespace,
      "create",
      "secret",
      "generic",
      "neon-api-key",
      `--from-literal=apiKey=${emulator.bootstrapKey}`,
    ]);
    await kubectl([
      "-n",
      operatorNamespace,
      "rollout",
      "status",
      "deployment/neon-cloud-operator",
      "--timeout=180s",
    ]);
    await leader();
    expect(await kubectl(["get", "clusterrolebindings", "-o", "name"])).not.toContain("neon-cloud-operator");
    await endpointLifecycle("watched", "br-dev", "default");
    // A namespace it does not watch: the resource stays untouched.
    await kubectl(["apply", "-f", "-"], computeEndpoint("unwatched", "br-dev"));
    await leader();
    expect(
      (
        await kubectl([
          "-n",
          workNamespace,
          "get",
          "computeendpoint",
          "unwatched",
          "-o",
          "jsonpath={.status}",
        ])
      ).trim(),
    ).toBe("");
    await kubectl(["-n", workNamespace, "delete", "computeendpoint", "unwatched", "--wait=false"]);
    await kubectl(["delete", "-k", overlay, "--wait", "--timeout=180s"]);
  });
});

describe("the Helm chart on a real node", () => {
  const release = "neon-cloud-operator";
  const helmNamespace = "neon-helm";
  const helm = (...args: string[]) => output(helmBinary, [`--kubeconfig=${cluster!.kubeconfig}`, ...args]);
  let helmBinary: string;

  it("helm install: pods Ready, one leader, a ComputeEndpoint's lifecycle", async () => {
    helmBinary = await buildHelm();
    await kubectl(["create", "namespace", helmNamespace]);
    await kubectl([
      "-n",
      helmNamespace,
      "create",
      "secret",
      "generic",
      "neon-api-key",
      `--from-literal=apiKey=${emulator.bootstrapKey}`,
    ]);
    await helm(
      "install",
      release,
      join(repoRoot, "deploy", "helm", "neon-cloud-operator"),
      "-n",
      helmNamespace,
      "--set",
      `image.repository=${operatorImage.name}`,
      "--set",
      `image.tag=${operatorImage.tag}`,
      "--set",
      `platform.baseUrl=${emulator.url}`,
      "--wait",
      "--timeout=3m",
    );
    await leader(helmNamespace);
    await endpointLifecycle("charted", "br-dev", workNamespace);
  });

  it("helm upgrade to a newly built image during work: nothing duplicated or lost", async () => {
    const tag = `${operatorImage.tag}-upgrade`;
    const archive = join(work, "upgrade.oci.tar");
    await buildImage({ tag: `${operatorImage.name}:${tag}`, ociArchive: archive });
    await importImage(cluster!, archive);
    await endpointsThrough(
      "br-staging",
      "upgrade",
      async () => {
        await helm(
          "upgrade",
          release,
          join(repoRoot, "deploy", "helm", "neon-cloud-operator"),
          "-n",
          helmNamespace,
          "--reuse-values",
          "--set",
          `image.tag=${tag}`,
        );
        await kubectl([
          "-n",
          helmNamespace,
          "rollout",
          "status",
          "deployment/neon-cloud-operator",
          "--timeout=180s",
        ]);
      },
      helmNamespace,
    );
    const images = await kubectl([
      "-n",
      helmNamespace,
      "get",
      "pods",
      "-o",
      "jsonpath={.items[*].spec.containers[0].image}",
    ]);
    expect(images.split(" ").every((i) => i.endsWith(`:${tag}`))).toBe(true);
  });

  it("helm uninstall leaves what docs/install.md says: the CRDs and the Secret you created", async () => {
    await helm("uninstall", release, "-n", helmNamespace, "--wait");
    expect(await kubectl(["get", "crd", "-o", "name"])).toContain("computeendpoints.neoncloud.dev");
    expect(await kubectl(["-n", helmNamespace, "get", "secret", "-o", "name"])).toContain(
      "secret/neon-api-key",
    );
    const left = await kubectl([
      "-n",
      helmNamespace,
      "get",
      "deployments,services,serviceaccounts,roles,rolebindings,leases",
      "-o",
      "name",
    ]);
    expect(left.split("\n").filter((l) => l && !l.endsWith("/default") && !l.includes("lease"))).toEqual([]);
    expect(await kubectl(["get", "clusterroles,clusterrolebindings", "-o", "name"])).not.toContain(
      "neon-cloud-operator",
    );
  });
});
