// The operator as its users deploy it, on a real node: the image built from
// the Dockerfile (`npm run image`) imported into the node's containerd,
// deploy/base applied with kubectl, two pods on kubelet + runc + CNI bridge,
// talking to the API server through the kubernetes Service and to the
// emulator on the pod bridge. Resources are driven with kubectl; what counts
// is what the platform (the emulator) ends up holding.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { output } from "../../../scripts/image/host.ts";
import { buildImage } from "../../../scripts/image/main.ts";
import { importImage, nodeDown, nodeUp, type NodeCluster } from "../../../scripts/node/cluster.ts";
import { existingHostPaths, fenceDrops } from "../../../scripts/node/host.ts";
import { placements, seedFor } from "../../../scripts/bench/workload.ts";
import { credentialsGrant } from "../../../src/api/grant.ts";
import { NotFoundError, PlatformClient } from "../../../src/platform/index.ts";
import { startEmulator, type Emulator } from "../../../tools/emulator/index.ts";
import { buildHelm } from "../../support/helm.ts";
import { testSeed } from "../../support/operator.ts";
import { eventually } from "../../support/kube.ts";
import {
  applyCredentials,
  isReady,
  kubectlFor,
  mib,
  runProbePod,
  workingSets,
  lease,
  nodeLeftovers,
  operatorImage,
  operatorPods,
  repoRoot,
  restartReport,
  writeOverlay,
  type Kubectl,
} from "./support.ts";

const operatorNamespace = "neon-cloud-operator";
const workNamespace = "e2e";
/** Where the 1,000 endpoints of the memory scenario live, on projects of their own. */
const scaleNamespace = "e2e-scale";
/** A namespace no CredentialsGrant names: its resources get NotGranted from the operator's key. */
const ungrantedNamespace = "e2e-ungranted";
const scale = placements(1000, 20, "mem");
const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(0)} s`;
/** deploy/base's and the chart's memory limit. */
const memoryLimit = 256 * 2 ** 20;
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
    seed: {
      projects: [
        ...testSeed.projects,
        ...seedFor(scale, [...new Set(scale.map((p) => p.projectId))]).projects,
      ],
    },
    // The platform's rate limits are off: the operator still paces itself to them (700 a minute).
    rateLimits: false,
    operationDurationMs: 150,
    // The endpoints' Postgres where pods reach it: on the bridge, named so in connection URIs.
    postgres: { listenHost: cluster.address },
  });
  platform = new PlatformClient({ baseUrl: emulator.url, apiKey: emulator.bootstrapKey });
  kubectl = kubectlFor(cluster);
  for (const ns of [workNamespace, scaleNamespace, ungrantedNamespace])
    await kubectl(["create", "namespace", ns]);
});

/**
 * The shipped installs grant nothing: the cluster administrator grants the operator's key to the
 * namespaces that use it, as docs/install.md says; one namespace stays ungranted. Applied once an
 * install has put the CRDs in place (each install's removal takes them, and the grant, away).
 */
async function grantNamespaces(): Promise<void> {
  await kubectl([
    "wait",
    "--for=condition=Established",
    "--timeout=60s",
    "crd/credentialsgrants.neoncloud.dev",
  ]);
  await kubectl(
    ["apply", "-f", "-"],
    JSON.stringify(
      credentialsGrant("e2e", {
        namespaces: [workNamespace, scaleNamespace],
        projects: ["*"],
        mintApiKeys: true,
      }),
    ),
  );
}

afterAll(async () => {
  await emulator?.close();
  if (cluster) {
    await nodeDown();
    expect(await nodeLeftovers(cluster, hostPathsBefore)).toEqual([]);
  }
  if (work) await rm(work, { recursive: true, force: true });
});

const computeEndpoint = (
  name: string,
  branchId: string,
  type = "read_only",
  namespace = workNamespace,
  extra: Record<string, unknown> = {},
) =>
  JSON.stringify({
    apiVersion: "neoncloud.dev/v1alpha1",
    kind: "ComputeEndpoint",
    metadata: { name, namespace },
    spec: { projectId: "proj-alpha", branchId, type, computeUnits: { min: 0.25, max: 1 }, ...extra },
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

const endpointIds = async (names: string[], namespace = workNamespace) =>
  Promise.all(
    names.map(async (n) =>
      (
        await kubectl(["-n", namespace, "get", "computeendpoint", n, "-o", "jsonpath={.status.endpointId}"])
      ).trim(),
    ),
  );

/** Waits until the platform no longer holds what a deleted resource stood for. */
const gone = (what: string, check: () => Promise<boolean>, timeoutMs = 30_000) =>
  eventually(async () => ((await check()) ? true : undefined), {
    what: `${what} gone from the platform`,
    timeoutMs,
    intervalMs: 250,
  });

/** The endpoints the platform holds on a branch. */
const onBranch = async (branchId: string) =>
  (await platform.listEndpoints("proj-alpha")).filter((e) => e.branchId === branchId).map((e) => e.id);

/**
 * After each scenario, passed or failed: its resources deleted while the
 * operator still runs, so one failure cannot hold the next scenario up with a
 * leftover finalizer. What the operator cannot finish in a minute loses its
 * finalizers (the platform may then keep an endpoint, which the scenarios'
 * before/after comparisons tolerate).
 */
async function removeWork(): Promise<void> {
  for (const namespace of [workNamespace, scaleNamespace, "default"]) {
    const kinds = "computeendpoints,apikeys,projects";
    const left = await kubectl(["-n", namespace, "get", kinds, "-o", "name"]).catch(() => "");
    if (!left.trim()) continue;
    await kubectl(["-n", namespace, "delete", kinds, "--all", "--timeout=60s"]).catch(async () => {
      const stuck = await kubectl(["-n", namespace, "get", kinds, "-o", "name"]).catch(() => "");
      for (const name of stuck.split("\n").filter(Boolean)) {
        await kubectl([
          "-n",
          namespace,
          "patch",
          name,
          "--type=merge",
          "-p",
          '{"metadata":{"finalizers":null}}',
        ]).catch(() => "");
      }
    });
  }
}

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
  const already = await onBranch(branchId);
  await kubectl(["apply", "-f", "-"], names.map((n) => computeEndpoint(n, branchId)).join("\n---\n"));
  await disrupt(before);
  await waitReady("computeendpoint", names);
  const ids = await endpointIds(names);
  // One platform endpoint per resource: none created twice, none lost.
  expect(new Set(ids).size).toBe(names.length);
  expect((await onBranch(branchId)).sort()).toEqual([...already, ...ids].sort());
  await leader(namespace);
  await kubectl(["-n", workNamespace, "delete", "computeendpoint", ...names, "--timeout=120s"]);
  await gone(`the endpoints on ${branchId}`, async () =>
    (await onBranch(branchId)).every((id) => already.includes(id)),
  );
}

/** deploy/namespaced's operator runs in, and watches, the namespace its kustomization sets: default. */
const namespacedNamespace = "default";

/** The namespace deploy/<base>'s operator runs in. */
const namespaceOf = (base: string) => (base === "namespaced" ? namespacedNamespace : operatorNamespace);

/**
 * The cluster administrator's part of deploy/namespaced (docs/install.md, step namespaced-admin):
 * deploy/cluster, and its roles bound to the ServiceAccount of the watched namespace.
 */
async function administerNamespaced(action: "create" | "delete"): Promise<void> {
  const account = `${namespacedNamespace}:neon-cloud-operator`;
  const clusterRoles = ["grants", "metrics-auth"];
  const bindingOf = (role: string) => `neon-cloud-operator-${role}-${namespacedNamespace}`;
  if (action === "create") {
    await kubectl(["apply", "-k", join(repoRoot, "deploy", "cluster")]);
    await kubectl([
      "-n",
      namespacedNamespace,
      "create",
      "rolebinding",
      "neon-cloud-operator",
      "--clusterrole=neon-cloud-operator",
      `--serviceaccount=${account}`,
    ]);
    for (const role of clusterRoles)
      await kubectl([
        "create",
        "clusterrolebinding",
        bindingOf(role),
        `--clusterrole=neon-cloud-operator-${role}`,
        `--serviceaccount=${account}`,
      ]);
  } else {
    await kubectl([
      "-n",
      namespacedNamespace,
      "delete",
      "rolebinding",
      "neon-cloud-operator",
      "--ignore-not-found",
    ]);
    await kubectl(["delete", "clusterrolebinding", ...clusterRoles.map(bindingOf), "--ignore-not-found"]);
    await kubectl([
      "delete",
      "-k",
      join(repoRoot, "deploy", "cluster"),
      "--ignore-not-found",
      "--wait",
      "--timeout=180s",
    ]);
  }
}

/** Applies deploy/<base> pointed at the image and the emulator, and waits for its rollout. */
async function deploy(base: string): Promise<string> {
  if (base === "namespaced") await administerNamespaced("create");
  const overlay = await writeOverlay(join(work, base), base, emulator.url);
  await kubectl(["apply", "-k", overlay]);
  await grantNamespaces();
  await applyCredentials(kubectl, namespaceOf(base), emulator.bootstrapKey);
  await kubectl([
    "-n",
    namespaceOf(base),
    "rollout",
    "status",
    "deployment/neon-cloud-operator",
    "--timeout=180s",
  ]);
  return overlay;
}

/** Takes a deploy/ variant away again (its CRDs too, so no resource may be left). */
async function undeploy(base: string): Promise<void> {
  await removeWork();
  await kubectl(["delete", "-k", join(work, base), "--ignore-not-found", "--wait", "--timeout=180s"]);
  if (base === "namespaced") {
    await kubectl(["-n", namespacedNamespace, "delete", "secret", "neon-api-key", "--ignore-not-found"]);
    await administerNamespaced("delete");
  }
}

/** For a describe block: deploy/<base> applied before its scenarios, their work removed after each, taken away after all. */
function deployedFor(base: string): void {
  beforeAll(async () => {
    await deploy(base);
  });
  afterEach(removeWork);
  afterAll(async () => {
    await undeploy(base);
  });
}

/**
 * Runs `sql` in a pod of the operator's image whose environment is the connection Secret `secret`
 * (envFrom, as an app reads it) once the operator has written it; the rows as JSON.
 */
async function queryWith(secret: string, sql: string): Promise<string> {
  await eventually(
    async () =>
      (await kubectl(["-n", workNamespace, "get", "secret", secret, "-o", "name"])).trim() ? true : undefined,
    { what: `the connection Secret ${secret}`, timeoutMs: 60_000, intervalMs: 500 },
  );
  const script = `
      const { Client } = require("pg");
      const client = new Client({ connectionString: process.env.DATABASE_URL });
      client.connect()
        .then(() => client.query(${JSON.stringify(sql)}))
        .then((result) => { console.log(JSON.stringify(result.rows)); return client.end(); })
        .catch((err) => { console.error(err.code ?? "error", err.message); process.exit(1); });`;
  const { phase, log } = await runProbePod(kubectl, {
    name: `query-${secret}`,
    namespace: workNamespace,
    script,
    envFrom: [{ secretRef: { name: secret } }],
  });
  process.stdout.write(`database probe (${secret}): ${log}`);
  expect(phase).toBe("Succeeded");
  return log.trim();
}

describe("deploy/base on a real node", () => {
  deployedFor("base");

  it("runs two pods from the image, Ready with probes passing, exactly one holding the Lease", async () => {
    const holder = await leader();
    const pods = await operatorPods(kubectl, operatorNamespace);
    expect(pods.map((p) => p.metadata.name)).toContain(holder);
    // Probes pass: both Ready, neither restarted (by its liveness probe, or by exiting). A restart
    // is reported with the earlier container's end and log, which are gone once the pod is.
    // Empty when none restarted; else each restarted pod's report is the failure message.
    expect(await restartReport(kubectl, operatorNamespace, pods)).toBe("");
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

  it("refuses an ungranted namespace the operator's key with the documented reason, sending nothing", async () => {
    const before = emulator.requestLog.latest().length;
    await kubectl(
      ["apply", "-f", "-"],
      computeEndpoint("db", "br-feature", "read_write", ungrantedNamespace),
    );
    await kubectl([
      "-n",
      ungrantedNamespace,
      "wait",
      '--for=jsonpath={.status.conditions[?(@.type=="Ready")].reason}=NotGranted',
      "--timeout=120s",
      "computeendpoint/db",
    ]);
    const sent = emulator.requestLog
      .latest()
      .slice(before)
      .filter((e) => e.method !== "GET");
    expect(sent).toEqual([]);
    await kubectl(["-n", ungrantedNamespace, "delete", "computeendpoint/db", "--timeout=120s"]);
  });

  it("stays under its memory limit, by the kubelet's own figures; Node's heap limit fits inside it", async () => {
    const sets = await workingSets(kubectl, cluster!.nodeName, operatorNamespace);
    expect(sets.size).toBe(2);
    for (const [pod, bytes] of sets) {
      process.stdout.write(`${pod}: working set ${mib(bytes)}\n`);
      expect(bytes).toBeGreaterThan(0);
      expect(bytes).toBeLessThan(memoryLimit);
    }
    for (const pod of sets.keys()) {
      const figures = JSON.parse(
        await kubectl([
          "-n",
          operatorNamespace,
          "exec",
          pod,
          "--",
          "node",
          "-p",
          "JSON.stringify({ limit: process.constrainedMemory(), heap: v8.getHeapStatistics().heap_size_limit })",
        ]),
      ) as { limit: number; heap: number };
      process.stdout.write(`${pod}: cgroup limit ${mib(figures.limit)}, heap limit ${mib(figures.heap)}\n`);
      expect(figures.limit).toBe(memoryLimit);
      // NODE_OPTIONS in deploy/base: without it Node derives 259 MiB from a 256 MiB limit.
      expect(figures.heap).toBeLessThan(figures.limit);
    }
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

  it("keeps pods on this machine: a connection beyond it is dropped by the fence, the emulator on the bridge answers", async () => {
    // TEST-NET-3 (RFC 5737): routed out through the default route, never a real host.
    const outside = "203.0.113.1";
    const dropsBefore = await fenceDrops();
    const script = `
      const net = require("node:net");
      const connect = (host, port) => new Promise((done) => {
        const socket = net.connect({ host, port, timeout: 3000 });
        socket.once("connect", () => { socket.destroy(); done("connected"); });
        socket.once("timeout", () => { socket.destroy(); done("timeout"); });
        socket.once("error", (err) => done(err.code));
      });
      (async () => {
        const outside = await connect(${JSON.stringify(outside)}, 443);
        const emulator = await fetch(${JSON.stringify(`${emulator.url}/projects`)}).then((r) => r.status, (e) => String(e));
        console.log(JSON.stringify({ outside, emulator }));
      })();`;
    const { phase, log } = await runProbePod(kubectl, { name: "fence", namespace: workNamespace, script });
    process.stdout.write(`fence probe: ${log}`);
    expect(phase).toBe("Succeeded");
    const result = JSON.parse(log.trim().split("\n").pop() ?? "{}") as {
      outside?: string;
      emulator?: number;
    };
    expect(result.outside).not.toBe("connected");
    // Reached: the platform API refuses a request without a key.
    expect(result.emulator).toBe(401);
    expect(await fenceDrops()).toBeGreaterThan(dropsBefore);
  });

  it("gives a pod its database: a connection Secret read with envFrom, `select 1` on the emulator's Postgres", async () => {
    await kubectl(
      ["apply", "-f", "-"],
      computeEndpoint("app", "br-dev", "read_write", workNamespace, {
        connectionSecret: { name: "app-db", role: "neondb_owner", database: "neondb" },
      }),
    );
    await waitReady("computeendpoint", ["app"]);
    expect(await queryWith("app-db", "select 1 as one")).toBe('[{"one":1}]');
  });

  it("creates a Project where a CredentialsGrant allows it, and a pod connects with its connection Secret", async () => {
    // The cluster administrator lets the namespace create projects with the operator's key.
    await kubectl(
      ["apply", "-f", "-"],
      JSON.stringify(credentialsGrant("e2e-projects", { namespaces: [workNamespace], createProjects: true })),
    );
    await kubectl(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "neoncloud.dev/v1alpha1",
        kind: "Project",
        metadata: { name: "tenant", namespace: workNamespace },
        spec: {
          defaultBranch: { databaseName: "app" },
          connectionSecret: { name: "tenant-db" },
          deletionPolicy: "Delete",
        },
      }),
    );
    await waitReady("project", ["tenant"]);
    const id = (
      await kubectl(["-n", workNamespace, "get", "project", "tenant", "-o", "jsonpath={.status.projectId}"])
    ).trim();
    expect((await platform.getProject(id)).id).toBe(id);
    // The project's own Postgres, as its owner role (app_owner, the platform's default for app).
    expect(await queryWith("tenant-db", "select current_database() as db, current_user as me")).toBe(
      '[{"db":"app","me":"app_owner"}]',
    );
    await kubectl(["-n", workNamespace, "delete", "project/tenant", "--timeout=120s"]);
    await gone("the project", () =>
      platform.getProject(id).then(
        () => false,
        (err) => err instanceof NotFoundError,
      ),
    );
    await kubectl(["delete", "credentialsgrant", "e2e-projects"]);
  });

  it("reconciles 1,000 ComputeEndpoints under its memory limit, by the kubelet's figures, never restarted", async () => {
    const pods = async () =>
      new Map((await operatorPods(kubectl, operatorNamespace)).map((p) => [p.metadata.name, p]));
    const restarts = async () =>
      [...(await pods()).values()].map(
        (p) => `${p.metadata.uid}:${p.status.containerStatuses?.[0]?.restartCount}`,
      );
    const before = await restarts();
    const idle = await workingSets(kubectl, cluster!.nodeName, operatorNamespace);
    const peak = new Map<string, number>();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        for (const [pod, bytes] of await workingSets(kubectl, cluster!.nodeName, operatorNamespace).catch(
          () => new Map<string, number>(),
        ))
          peak.set(pod, Math.max(peak.get(pod) ?? 0, bytes));
        await new Promise((r) => setTimeout(r, 2_000));
      }
    })();
    try {
      const file = join(work, "scale.yaml");
      await writeFile(
        file,
        scale
          .map((p) =>
            JSON.stringify({
              apiVersion: "neoncloud.dev/v1alpha1",
              kind: "ComputeEndpoint",
              metadata: { name: p.name, namespace: scaleNamespace },
              spec: { projectId: p.projectId, branchId: p.branchId, type: "read_write" },
            }),
          )
          .join("\n---\n"),
      );
      const applied = Date.now();
      await kubectl(["apply", "--server-side", "--field-manager=e2e", "-f", file]);
      await kubectl([
        "-n",
        scaleNamespace,
        "wait",
        "--for=condition=Ready",
        "--all",
        "computeendpoints",
        "--timeout=600s",
      ]);
      process.stdout.write(`1,000 ComputeEndpoints Ready ${seconds(applied)} after apply\n`);
      const projects = [...new Set(scale.map((p) => p.projectId))];
      const branches = new Set(scale.map((p) => p.branchId));
      const held = async () =>
        (await Promise.all(projects.map((id) => platform.listEndpoints(id))))
          .flat()
          .filter((e) => branches.has(e.branchId));
      // One platform endpoint per resource: none lost, none twice.
      expect((await held()).length).toBe(scale.length);
      const ready = await workingSets(kubectl, cluster!.nodeName, operatorNamespace);
      // Not --wait: kubectl then waits on each of the 1,000 in turn and outlasts the deletion.
      await kubectl(["-n", scaleNamespace, "delete", "computeendpoints", "--all", "--wait=false"]);
      const deleted = Date.now();
      await gone("the 1,000 endpoints", async () => (await held()).length === 0, 420_000);
      process.stdout.write(`1,000 endpoints gone from the platform ${seconds(deleted)} after delete\n`);
      await eventually(
        async () =>
          (await kubectl(["-n", scaleNamespace, "get", "computeendpoints", "-o", "name"])).trim()
            ? undefined
            : true,
        { what: "the 1,000 ComputeEndpoints gone", timeoutMs: 120_000, intervalMs: 1_000 },
      );
      const after = await workingSets(kubectl, cluster!.nodeName, operatorNamespace);
      const holder = (await lease(kubectl, operatorNamespace))?.spec.holderIdentity ?? "";
      for (const pod of idle.keys()) {
        process.stdout.write(
          `${pod}${holder.startsWith(`${pod}_`) ? " (leader)" : ""}: working set idle ${mib(idle.get(pod) ?? 0)}, peak while reconciling 1,000 ${mib(peak.get(pod) ?? 0)}, ` +
            `all Ready ${mib(ready.get(pod) ?? 0)}, after deleting them ${mib(after.get(pod) ?? 0)} (limit ${mib(memoryLimit)})\n`,
        );
      }
    } finally {
      sampling = false;
      await sampler;
    }
    for (const bytes of peak.values()) expect(bytes).toBeLessThan(memoryLimit);
    // The same pods, their containers never restarted (an OOM kill would restart one).
    expect(await restarts()).toEqual(before);
  }, 900_000);
});

/** One endpoint's whole life through the operator in its pods: apply, Ready, on the platform; delete, gone. */
async function endpointLifecycle(name: string, branchId: string, namespace: string) {
  await kubectl(["apply", "-f", "-"], computeEndpoint(name, branchId, "read_only", namespace));
  await waitReady("computeendpoint", [name], namespace);
  const [id] = await endpointIds([name], namespace);
  expect(await onBranch(branchId)).toContain(id);
  await kubectl(["-n", namespace, "delete", "computeendpoint", name, "--timeout=120s"]);
  await gone("the endpoint", async () => !(await onBranch(branchId)).includes(id ?? ""));
}

describe("deploy/namespaced on a real node", () => {
  deployedFor("namespaced");

  it("watches only its namespace, with no cluster-wide grants of its own", async () => {
    await leader(namespacedNamespace);
    // Its rules are a RoleBinding in the watched namespace; the only cluster-wide bindings are the
    // administrator's: the reads of CredentialsGrants and namespaces, and secure metrics' reviews.
    const bindings = (await kubectl(["get", "clusterrolebindings", "-o", "name"])).split("\n");
    expect(bindings.filter((b) => b.includes("neon-cloud-operator")).sort()).toEqual([
      `clusterrolebinding.rbac.authorization.k8s.io/neon-cloud-operator-grants-${namespacedNamespace}`,
      `clusterrolebinding.rbac.authorization.k8s.io/neon-cloud-operator-metrics-auth-${namespacedNamespace}`,
    ]);
    // A namespace it does not watch, applied first: by the time the watched one has come and
    // gone, the unwatched one has neither a finalizer nor a condition, nor an endpoint.
    await kubectl(["apply", "-f", "-"], computeEndpoint("unwatched", "br-dev"));
    await endpointLifecycle("watched", "br-dev", namespacedNamespace);
    const untouched = await kubectl([
      "-n",
      workNamespace,
      "get",
      "computeendpoint",
      "unwatched",
      "-o",
      "jsonpath={.metadata.finalizers}{.status.conditions}{.status.endpointId}",
    ]);
    expect(untouched.trim()).toBe("");
  });
});

describe("the Helm chart on a real node", () => {
  const release = "neon-cloud-operator";
  const helmNamespace = "neon-helm";
  const chart = join(repoRoot, "deploy", "helm", "neon-cloud-operator");
  const helm = (...args: string[]) => output(helmBinary, [`--kubeconfig=${cluster!.kubeconfig}`, ...args]);
  let helmBinary: string;

  beforeAll(async () => {
    helmBinary = await buildHelm();
    await kubectl(["create", "namespace", helmNamespace]);
    await applyCredentials(kubectl, helmNamespace, emulator.bootstrapKey);
  });
  afterEach(removeWork);
  afterAll(async () => {
    await removeWork();
    await helm("uninstall", release, "-n", helmNamespace, "--wait", "--ignore-not-found").catch(() => "");
    await kubectl(["delete", "namespace", helmNamespace, "--ignore-not-found", "--wait", "--timeout=180s"]);
  });

  it("helm install: pods Ready, one leader, a ComputeEndpoint's lifecycle", async () => {
    await helm(
      "install",
      release,
      chart,
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
    await grantNamespaces();
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
          chart,
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

  it("two shards of the image by label: each resource made by its own shard, one moved without a second create", async () => {
    const shardOf = (label: string) => ["-l", `app.kubernetes.io/instance=${release},${label}`];
    await helm(
      "upgrade",
      release,
      chart,
      "-n",
      helmNamespace,
      "--reuse-values",
      "--set",
      "shards[0].name=a",
      "--set",
      "shards[0].accountBudgetShare=0.5",
      "--set",
      "accountBudgetShare=0.5",
      "--set",
      "logLevel=debug",
      // A moved resource waits this long before the shard it joins acts (the default is a minute).
      "--set",
      "extraArgs[0]=--shard-handover-delay=5s",
      "--wait",
      "--timeout=3m",
    );
    for (const deployment of ["neon-cloud-operator", "neon-cloud-operator-shard-a"])
      await kubectl(["-n", helmNamespace, "rollout", "status", `deployment/${deployment}`, "--timeout=180s"]);
    const labelled = (name: string, shard: string | undefined, extra: Record<string, unknown> = {}) => {
      const obj = JSON.parse(computeEndpoint(name, "br-dev", "read_only", workNamespace, extra)) as {
        metadata: { labels?: Record<string, string> };
      };
      if (shard) obj.metadata.labels = { "neoncloud.dev/shard": shard };
      return JSON.stringify(obj);
    };
    const made = () =>
      emulator.requestLog.counters().by_route["POST /projects/:project_id/endpoints"]?.["201"] ?? 0;
    const before = made();
    await kubectl(
      ["apply", "-f", "-"],
      [labelled("in-main", undefined), labelled("in-a", "a")].join("\n---\n"),
    );
    await waitReady("computeendpoint", ["in-main", "in-a"]);
    expect(made() - before).toBe(2);
    const logsOf = async (label: string) =>
      kubectl(["-n", helmNamespace, "logs", ...shardOf(label), "--tail=-1", "--prefix"]);
    const about = (logs: string, name: string) => logs.includes(`"name":"${name}"`);
    const [mainLogs, shardLogs] = [
      await logsOf("!neoncloud.dev/shard"),
      await logsOf("neoncloud.dev/shard=a"),
    ];
    expect([about(mainLogs, "in-main"), about(mainLogs, "in-a")]).toEqual([true, false]);
    expect([about(shardLogs, "in-a"), about(shardLogs, "in-main")]).toEqual([true, false]);

    // Moved to shard a and changed: the shard makes the change on the endpoint it finds, none new.
    const [id] = await endpointIds(["in-main"]);
    await kubectl(["-n", workNamespace, "label", "computeendpoint", "in-main", "neoncloud.dev/shard=a"]);
    await kubectl(["apply", "-f", "-"], labelled("in-main", "a", { computeUnits: { min: 0.25, max: 2 } }));
    await eventually(
      async () =>
        (await platform.listEndpoints("proj-alpha")).find((e) => e.id === id)?.autoscalingLimitMaxCu === 2
          ? true
          : undefined,
      { what: "the moved resource's change on the platform", timeoutMs: 120_000, intervalMs: 500 },
    ).catch(async (err: unknown) => {
      // What each side said of it, for whoever reads a failure.
      for (const label of ["!neoncloud.dev/shard", "neoncloud.dev/shard=a"]) {
        const lines = (await logsOf(label)).split("\n").filter((l) => about(l, "in-main"));
        process.stdout.write(`${label}:\n${lines.slice(-30).join("\n")}\n`);
      }
      process.stdout.write(
        await kubectl(["-n", workNamespace, "get", "computeendpoint", "in-main", "-o", "yaml"]),
      );
      throw err;
    });
    expect(made() - before).toBe(2);
    expect(await endpointIds(["in-main"])).toEqual([id]);
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
