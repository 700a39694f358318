// The operator as a separate process (`node <image flags> dist/cli.js run`, see
// operator-build.ts), as it runs in a cluster: its own kubeconfig, one
// namespace, no leader election, metrics on a free loopback port. Logs go to a file.
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { createServer } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import type { ResourceKind } from "../../src/runtime/index.ts";
import type { Lab } from "./lab.ts";
import type { OperatorBuild } from "./operator-build.ts";
import { sampleProcess, type ProcessSample } from "./process-stats.ts";
import { CepWatch } from "./watch.ts";

export interface OperatorProcessOptions {
  build: OperatorBuild;
  kubeconfig: string;
  namespace: string;
  platformUrl: string;
  credentialsSecret: string;
  logFile: string;
  /** Extra flags, e.g. `--operation-polling=per-operation`, `--poll-interval=100ms`. */
  flags?: string[];
}

export interface OperatorProcess {
  pid: number;
  /** Resolves when the process exits (a crash, an out-of-memory kill). */
  exited: Promise<string>;
  metricsUrl: string;
  sample(): ProcessSample | undefined;
  /** Prometheus text of the operator's /metrics. */
  metrics(): Promise<string>;
  stop(): Promise<void>;
}

/** Operator processes still running, so an interrupted bench leaves none behind. */
const running = new Set<ChildProcess>();

export function killOperatorProcesses(): void {
  for (const child of running) child.kill("SIGKILL");
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  await new Promise<void>((done) => server.close(() => done()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

export async function startOperatorProcess(options: OperatorProcessOptions): Promise<OperatorProcess> {
  const port = await freePort();
  const metricsUrl = `http://127.0.0.1:${port}`;
  const args = [
    ...options.build.nodeFlags,
    ...(process.env.BENCH_OPERATOR_NODE_FLAGS ?? "").split(/\s+/).filter((f) => f !== ""),
    options.build.cli,
    "run",
    `--platform-base-url=${options.platformUrl}`,
    `--default-credentials-secret=${options.credentialsSecret}`,
    `--namespaces=${options.namespace}`,
    "--no-leader-election",
    `--metrics-address=127.0.0.1:${port}`,
    ...(options.flags ?? []),
  ];
  const child: ChildProcess = spawn(process.execPath, args, {
    env: { ...process.env, KUBECONFIG: options.kubeconfig, POD_NAMESPACE: options.namespace },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  child.once("exit", () => running.delete(child));
  const log = createWriteStream(options.logFile);
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  const exited = new Promise<string>((done) =>
    child.once("exit", (code, signal) => done(signal ?? `exit code ${code}`)),
  );
  const pid = child.pid;
  if (pid === undefined) throw new Error("the operator did not start");

  // Ready once every cache has synced (/readyz answers 200).
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`the operator exited (${child.exitCode}); see ${options.logFile}`);
    const ok = await fetch(`${metricsUrl}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline)
      throw new Error(`the operator was not ready within 60 s; see ${options.logFile}`);
    await sleep(200);
  }
  return {
    pid,
    exited,
    metricsUrl,
    sample: () => sampleProcess(pid),
    metrics: () => fetch(`${metricsUrl}/metrics`).then((r) => r.text()),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

/** Sums a Prometheus counter's samples, optionally only those whose labels include `filter`. */
export function counterTotal(text: string, name: string, filter?: string): number {
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (filter !== undefined && !line.includes(filter)) continue;
    total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

/** A counter's samples summed by the value of one label (e.g. reconciles by `result`). */
export function counterByLabel(
  text: string,
  name: string,
  label: string,
  filter?: string,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    if (filter !== undefined && !line.includes(filter)) continue;
    const value = new RegExp(`${label}="([^"]*)"`).exec(line)?.[1] ?? "";
    out[value] = (out[value] ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return out;
}

/**
 * A namespace of the bench: the platform key in its credentials Secret, a watch on its
 * ComputeEndpoints (or the kind `watched` names), and an operator process acting there (its own namespace only).
 */
export async function operatorInNamespace(
  lab: Lab,
  options: {
    namespace: string;
    apiKey: string;
    platformUrl: string;
    logFile: string;
    flags?: string[];
    /** The kind the watch follows (default: ComputeEndpoints). */
    watched?: ResourceKind;
  },
): Promise<{ watch: CepWatch; operator: OperatorProcess }> {
  const { namespace } = options;
  await lab.createNamespace(namespace);
  await lab.createCredentialsSecret(namespace, "neon-api-key", options.apiKey);
  const watch = new CepWatch(lab.adminKubeConfig, namespace, options.watched);
  await watch.start();
  const operator = await startOperatorProcess({
    build: lab.operator,
    kubeconfig: lab.operatorKubeconfig,
    namespace,
    platformUrl: options.platformUrl,
    credentialsSecret: `${namespace}/neon-api-key`,
    logFile: options.logFile,
    ...(options.flags ? { flags: options.flags } : {}),
  });
  return { watch, operator };
}
