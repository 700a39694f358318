// A one-node Kubernetes cluster on this machine for the end-to-end suite: the
// control plane of test/controlplane serving the pod bridge's address, plus
// containerd (with Debian's runc and CNI bridge), kubelet, kube-proxy and
// kube-scheduler of the same release. Every process runs detached, so
// `npm run node:up` can return; its pids and what it changed on the host are
// kept in the state directory, which `npm run node:down` reads to take all of
// it back (down also runs after a failed up).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, open, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { cacheBase, stderrLog, type Log } from "../../tools/sandbox/go-build.ts";
import { cleanHost, ensurePackages, freePort, output, podmanEnv, run, systemPath } from "../image/host.ts";
import { buildNodeBinaries, type NodeBinaries } from "./binaries.ts";
import {
  nodeName,
  nodePaths,
  sandboxImage,
  writeCniConfig,
  writeContainerdConfig,
  writeKubeletConfig,
} from "./config.ts";
import {
  cleanFirewall,
  createBridge,
  existingHostPaths,
  fenceBridge,
  firewallTables,
  network,
  podProcesses,
  processesOf,
  readSysctls,
  removeBridge,
  removeHostPaths,
  removePodCgroups,
  restoreSysctls,
  unmountUnder,
} from "./host.ts";

export interface NodeCluster {
  /** Admin kubeconfig (system:masters). */
  kubeconfig: string;
  /** https://<bridge address>:<port> */
  server: string;
  /** The bridge's address: where pods reach this machine. */
  address: string;
  nodeName: string;
  binaries: NodeBinaries;
  /** The state directory; its logs/ holds every component's log. */
  dir: string;
  containerdSocket: string;
}

interface State {
  /** name -> pid, for the processes up started. */
  pids: Record<string, number>;
  tablesBefore: string[];
  sysctls: Record<string, string>;
  hostPathsBefore: string[];
  cluster?: Omit<NodeCluster, "binaries">;
}

export function nodeStateDir(): string {
  return join(cacheBase(), "node", "run");
}
const stateFile = () => join(nodeStateDir(), "state.json");

async function readState(): Promise<State | undefined> {
  try {
    return JSON.parse(await readFile(stateFile(), "utf8")) as State;
  } catch {
    return undefined;
  }
}
const writeState = (state: State) => writeFile(stateFile(), JSON.stringify(state, null, 2));

/** Starts `binary` in its own session, its output appended to logs/<name>.log; the pid is recorded. */
async function daemon(
  state: State,
  name: string,
  binary: string,
  args: string[],
  // The system's PATH: npm puts node_modules/.bin first, and a package there
  // ships an `nft` of its own that kube-proxy would run instead of nftables'.
  env: NodeJS.ProcessEnv = { ...process.env, PATH: systemPath },
): Promise<void> {
  const logs = join(nodeStateDir(), "logs");
  await mkdir(logs, { recursive: true });
  const out = await open(join(logs, `${name}.log`), "a");
  const child = spawn(binary, args, { detached: true, stdio: ["ignore", out.fd, out.fd], env });
  await new Promise<void>((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", reject);
  });
  child.unref();
  await out.close();
  state.pids[name] = child.pid ?? 0;
  await writeState(state);
}

/** The kubernetes Service's cluster IP (the first of the control plane's service range). */
const kubernetesServiceIP = "10.96.0.1";

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(`node: ${what} not within ${timeoutMs / 1000} s; see ${nodeStateDir()}/logs`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function stopPid(pid: number, graceMs: number): Promise<void> {
  if (!pid || !alive(pid)) return;
  process.kill(pid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (alive(pid)) process.kill(pid, "SIGKILL");
  while (alive(pid)) await new Promise((r) => setTimeout(r, 50));
}

/** The sandbox image: our static pause binary, committed by podman and saved as an OCI archive (cached). */
async function pauseArchive(binaries: NodeBinaries, log: Log): Promise<string> {
  const archive = join(binaries.containerdBinDir, "pause.oci.tar");
  if (existsSync(archive)) return archive;
  log(`node: committing ${sandboxImage} from ${binaries.pause}`);
  const env = await podmanEnv();
  const tar = `${archive}.layer.tar`;
  await run("tar", ["-C", binaries.containerdBinDir, "-cf", tar, "pause"]);
  try {
    await run(
      "podman",
      ["import", "--change", 'ENTRYPOINT ["/pause"]', "--change", "USER 65535:65535", tar, sandboxImage],
      { env },
    );
    await run("podman", ["save", "--format", "oci-archive", "--output", `${archive}.tmp`, sandboxImage], {
      env,
    });
    await run("podman", ["rmi", sandboxImage], { env });
    await run("mv", [`${archive}.tmp`, archive]);
  } finally {
    await rm(tar, { force: true });
    await cleanHost(env);
  }
  return archive;
}

/** Imports an OCI or Docker archive into the node's containerd (the namespace kubelet uses). */
export async function importImage(
  cluster: Pick<NodeCluster, "binaries" | "containerdSocket">,
  archive: string,
): Promise<void> {
  await run(cluster.binaries.ctr, [
    "--address",
    cluster.containerdSocket,
    "--namespace",
    "k8s.io",
    "images",
    "import",
    archive,
  ]);
}

export async function nodeUp(options: { log?: Log } = {}): Promise<NodeCluster> {
  const log = options.log ?? stderrLog;
  const started = Date.now();
  const binaries = await buildNodeBinaries(log);
  if (!existsSync("/usr/lib/cni/bridge")) {
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    await run("apt-get", ["update", "-q"], { env });
    await run("apt-get", ["install", "-y", "-q", "--no-install-recommends", "containernetworking-plugins"], {
      env,
    });
  }
  await ensurePackages({ runc: "runc", nft: "nftables", ip: "iproute2", podman: "podman" }, log);
  const pause = await pauseArchive(binaries, log);

  // Whatever an earlier run left (a killed launcher): take it back first.
  await nodeDown({ log });
  const dir = nodeStateDir();
  await mkdir(dir, { recursive: true });
  const state: State = {
    pids: {},
    tablesBefore: await firewallTables(),
    sysctls: await readSysctls(),
    hostPathsBefore: existingHostPaths(),
  };
  await writeState(state);
  try {
    const paths = nodePaths(dir);
    await createBridge();
    await fenceBridge();

    const cpDir = join(dir, "controlplane");
    await daemon(state, "controlplane", binaries.controlplane, [
      "serve",
      "--dir",
      cpDir,
      "--node-address",
      network.address,
    ]);
    const ready = await until("the control plane", 180_000, async () => {
      if (!alive(state.pids.controlplane ?? 0)) throw new Error("the control plane exited");
      const text = await readFile(join(dir, "logs", "controlplane.log"), "utf8");
      const line = text.split("\n").find((l) => l.startsWith('{"'));
      return line ? (JSON.parse(line) as { kubeconfig: string; server: string }) : undefined;
    });
    const kubeletKubeconfig = join(dir, "kubelet.kubeconfig");
    await output(binaries.controlplane, [
      "mint-user",
      "--dir",
      cpDir,
      "--user",
      `system:node:${nodeName}`,
      "--group",
      "system:nodes",
      "--out",
      kubeletKubeconfig,
    ]);

    await writeContainerdConfig(paths);
    await writeCniConfig(paths);
    await writeKubeletConfig(paths, join(cpDir, "ca.crt"));
    await daemon(state, "containerd", binaries.containerd, ["--config", paths.containerdConfig], {
      ...process.env,
      PATH: `${binaries.containerdBinDir}:${systemPath}`,
    });
    await until("containerd", 60_000, () =>
      Promise.resolve(existsSync(paths.containerdSocket) ? true : undefined),
    );
    const cluster: NodeCluster = {
      kubeconfig: ready.kubeconfig,
      server: ready.server,
      address: network.address,
      nodeName,
      binaries,
      dir,
      containerdSocket: paths.containerdSocket,
    };
    await importImage(cluster, pause);

    await daemon(state, "kubelet", binaries.kubelet, [
      `--config=${paths.kubeletConfig}`,
      `--kubeconfig=${kubeletKubeconfig}`,
      `--root-dir=${paths.kubeletRoot}`,
      `--hostname-override=${nodeName}`,
      `--node-ip=${network.address}`,
      "--v=1",
    ]);
    await daemon(state, "kube-proxy", binaries.kubeProxy, [
      `--kubeconfig=${ready.kubeconfig}`,
      "--proxy-mode=nftables",
      `--hostname-override=${nodeName}`,
      `--cluster-cidr=${network.podCIDR}`,
      // Leave conntrack's limits as the host has them.
      "--conntrack-max-per-core=0",
      // Free loopback ports: the defaults (10256, 10249) are fixed ones another process may hold.
      `--healthz-bind-address=127.0.0.1:${await freePort()}`,
      `--metrics-bind-address=127.0.0.1:${await freePort()}`,
    ]);
    await daemon(state, "kube-scheduler", binaries.kubeScheduler, [
      `--kubeconfig=${ready.kubeconfig}`,
      `--authentication-kubeconfig=${ready.kubeconfig}`,
      `--authorization-kubeconfig=${ready.kubeconfig}`,
      "--leader-elect=false",
      "--secure-port=0",
    ]);
    await until("the node Ready and schedulable", 120_000, async () => {
      const node = JSON.parse(
        await output(binaries.kubectl, [
          `--kubeconfig=${ready.kubeconfig}`,
          "get",
          "node",
          nodeName,
          "-o",
          "json",
        ]),
      ) as { spec: { taints?: unknown[] }; status: { conditions?: { type: string; status: string }[] } };
      const isReady = node.status.conditions?.some((c) => c.type === "Ready" && c.status === "True");
      // The node lifecycle controller lifts the not-ready taint kubelet registers with.
      return isReady && (node.spec.taints ?? []).length === 0 ? true : undefined;
    });
    // Pods reach the API server through the kubernetes Service: kube-proxy's rules must be in place.
    await until("the kubernetes Service answering on its cluster IP", 60_000, async () => {
      for (const [name, pid] of Object.entries(state.pids)) {
        if (!alive(pid)) throw new Error(`${name} exited; see ${join(dir, "logs", `${name}.log`)}`);
      }
      const answer = await output(binaries.kubectl, [
        `--kubeconfig=${ready.kubeconfig}`,
        `--server=https://${kubernetesServiceIP}:443`,
        "--request-timeout=2s",
        "get",
        "--raw",
        "/readyz",
      ]);
      return answer.trim() === "ok" ? true : undefined;
    });
    state.cluster = { ...cluster };
    delete (state.cluster as Partial<NodeCluster>).binaries;
    await writeState(state);
    log(`node: ${nodeName} Ready at ${ready.server} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return cluster;
  } catch (err) {
    log(`node: up failed (${err instanceof Error ? err.message : String(err)}); taking everything back`);
    await nodeDown({ log, keepLogs: true });
    throw err;
  }
}

/** Stops everything up started and takes back what it changed; safe to run any time. */
export async function nodeDown(options: { log?: Log; keepLogs?: boolean } = {}): Promise<void> {
  const log = options.log ?? stderrLog;
  const state = await readState();
  const binaries = await buildNodeBinaries(log);
  const dir = nodeStateDir();
  const pids = state?.pids ?? {};
  // Nothing new may start: the kubelet and the scheduler first.
  for (const name of ["kubelet", "kube-scheduler", "kube-proxy"]) await stopPid(pids[name] ?? 0, 10_000);
  const socket = nodePaths(dir).containerdSocket;
  if (alive(pids.containerd ?? 0) && existsSync(socket)) {
    const ctr = (...args: string[]) =>
      output(binaries.ctr, ["--address", socket, "--namespace", "k8s.io", ...args]);
    const tasks = (await ctr("tasks", "ls", "--quiet").catch(() => "")).split("\n").filter(Boolean);
    for (const id of tasks) await ctr("tasks", "kill", "--signal", "SIGKILL", id).catch(() => "");
  }
  // The pods' processes (in kubelet's cgroups) and the shims that ran them.
  for (const pid of await podProcesses()) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
  for (const pid of await processesOf([join(binaries.containerdBinDir, "containerd-shim-runc-v2")]))
    await stopPid(pid, 2_000);
  await stopPid(pids.containerd ?? 0, 10_000);
  await stopPid(pids.controlplane ?? 0, 15_000);
  // Any of ours a lost state file no longer names.
  const ours = [
    binaries.kubelet,
    binaries.kubeProxy,
    binaries.kubeScheduler,
    binaries.containerd,
    binaries.controlplane,
  ];
  for (const pid of await processesOf(ours)) await stopPid(pid, 5_000);

  await unmountUnder([dir]);
  await removeBridge();
  // Without a state file nothing is known of the host before: only what is
  // surely ours goes (our table, kube-proxy's, Kubernetes' chains).
  await cleanFirewall(state?.tablesBefore ?? (await firewallTables()));
  await removePodCgroups();
  await removeHostPaths(state?.hostPathsBefore ?? existingHostPaths());
  if (state) await restoreSysctls(state.sysctls);
  if (options.keepLogs && existsSync(join(dir, "logs"))) {
    await rm(join(dir, "..", "logs"), { recursive: true, force: true });
    await run("mv", [join(dir, "logs"), join(dir, "..", "logs")]);
  }
  await rm(dir, { recursive: true, force: true });
}
