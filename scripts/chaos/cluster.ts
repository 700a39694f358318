// The Kubernetes side of a campaign: the control plane of test/controlplane/
// run with a state directory of our own, so it can be stopped and started
// again with its etcd data, certificates and port (an API server restart);
// and a TCP proxy between the operators and the API server, to cut watches.
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { KubeConfig } from "@kubernetes/client-node";
import { KubeClient } from "../../src/runtime/index.ts";
import { startTcpProxy, type TcpProxy } from "../../test/support/runtime/tcp-proxy.ts";
import { buildControlPlane, type ControlPlaneBinaries } from "../../tools/sandbox/controlplane.ts";

export interface Cluster {
  binaries: ControlPlaneBinaries;
  version: string;
  /** Admin kubeconfig straight to the API server (the campaign driver's view). */
  kubeconfig: string;
  /** Admin kubeconfig through the proxy (the operators' view). */
  operatorKubeconfig: string;
  kube: KubeClient;
  proxy: TcpProxy;
  /**
   * A proxy of its own in front of the API server and an admin kubeconfig through it, for one
   * replica whose path alone is to fail (the shared `proxy` fails every replica's at once).
   */
  privatePath(name: string): Promise<{ proxy: TcpProxy; kubeconfig: string }>;
  /** SIGTERM the API server (and its etcd) and start it again on the same state. */
  restart(options?: { downMs?: number; hard?: boolean }): Promise<void>;
  stop(): Promise<void>;
}

interface ReadyLine {
  kubeconfig: string;
  server: string;
  version: string;
}

export async function startCluster(dir: string, logFile: string): Promise<Cluster> {
  const binaries = await buildControlPlane((line) => process.stderr.write(`${line}\n`));
  const log: WriteStream = createWriteStream(logFile, { flags: "a" });
  let child: ChildProcess | undefined;

  const launch = async (): Promise<ReadyLine> => {
    const proc = spawn(binaries.controlplane, ["serve", "--dir", dir, "--exit-on-stdin-close"], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    child = proc;
    proc.stderr.pipe(log, { end: false });
    return new Promise<ReadyLine>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("control plane did not start within 120 s")), 120_000);
      createInterface({ input: proc.stdout }).once("line", (line) => {
        clearTimeout(timer);
        resolve(JSON.parse(line) as ReadyLine);
      });
      proc.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`control plane exited before it was ready (${signal ?? code}); see ${logFile}`));
      });
    });
  };
  const halt = async (hard: boolean): Promise<void> => {
    const proc = child;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
    proc.kill(hard ? "SIGKILL" : "SIGTERM");
    const killer = setTimeout(() => proc.kill("SIGKILL"), 20_000);
    await exited;
    clearTimeout(killer);
  };

  const ready = await launch();
  const server = new URL(ready.server);
  const proxy = await startTcpProxy(server);
  const operatorKubeconfig = join(dir, "operator.kubeconfig");
  const adminText = await readFile(ready.kubeconfig, "utf8");
  await writeFile(operatorKubeconfig, adminText.replaceAll(ready.server, proxy.url), { mode: 0o600 });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(ready.kubeconfig);

  return {
    binaries,
    version: ready.version,
    kubeconfig: ready.kubeconfig,
    operatorKubeconfig,
    kube: new KubeClient(kubeConfig, { requestTimeoutMs: 10_000 }),
    proxy,
    async privatePath(name) {
      const own = await startTcpProxy(server);
      const kubeconfig = join(dir, `${name}.kubeconfig`);
      await writeFile(kubeconfig, adminText.replaceAll(ready.server, own.url), { mode: 0o600 });
      return { proxy: own, kubeconfig };
    },
    async restart({ downMs = 0, hard = false } = {}) {
      await halt(hard);
      if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
      const again = await launch();
      if (again.server !== ready.server) {
        throw new Error(`the restarted API server moved from ${ready.server} to ${again.server}`);
      }
    },
    async stop() {
      await proxy.close();
      await halt(false);
      log.end();
    },
  };
}
