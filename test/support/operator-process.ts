// The operator as its own process (`node src/cli.ts run`), as it runs in a pod:
// started against a kubeconfig (usually one through the test's API proxy),
// Ready when its /readyz answers, killed with SIGKILL so no shutdown code runs.
// Every line it writes is kept, for the "no key value in any log" check.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { inject } from "vitest";
import { adminKubeConfig, kubectl } from "./kube.ts";

const repoRoot = resolve(import.meta.dirname, "..", "..");
const cli = join(repoRoot, "src", "cli.ts");

export interface OperatorProcessOptions {
  kubeconfig: string;
  platformUrl: string;
  /** The one namespace it watches (also its POD_NAMESPACE). */
  namespace: string;
  /** The default credentials Secret, `name` (in `namespace`) or `namespace/name`. */
  credentialsSecret: string;
  /** `--poll-interval`; the platform's 5 s is slow for tests whose operations take 150 ms. */
  pollInterval?: string;
  /** Every line of every process goes here too (one list for a whole test file). */
  lines?: string[];
  /** Elect a leader through a Lease in `namespace` (default: no leader election). */
  leaderElection?: boolean;
  /** More flags (a shard's selector, its Lease). */
  flags?: string[];
}

export class OperatorProcess {
  readonly name: string;
  /** Every line the process wrote, stdout and stderr. */
  readonly lines: string[] = [];
  readonly metricsUrl: string;
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;

  private constructor(options: OperatorProcessOptions, port: number) {
    this.name = `crash-op-${randomBytes(3).toString("hex")}`;
    this.metricsUrl = `http://127.0.0.1:${port}`;
    const args = [
      cli,
      "run",
      `--platform-base-url=${options.platformUrl}`,
      `--default-credentials-secret=${options.credentialsSecret}`,
      `--namespaces=${options.namespace}`,
      ...(options.leaderElection
        ? ["--leader-election", `--leader-election-namespace=${options.namespace}`]
        : ["--no-leader-election"]),
      `--metrics-address=127.0.0.1:${port}`,
      `--poll-interval=${options.pollInterval ?? "100ms"}`,
      "--log-level=debug",
      ...(options.flags ?? []),
    ];
    this.child = spawn(process.execPath, args, {
      cwd: repoRoot,
      env: {
        ...process.env,
        KUBECONFIG: options.kubeconfig,
        POD_NAME: this.name,
        POD_NAMESPACE: options.namespace,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const shared = options.lines;
    for (const stream of [this.child.stdout, this.child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream }).on("line", (line) => {
        this.lines.push(line);
        shared?.push(line);
      });
    }
    // "close", not "exit": by then its output has been read to the end.
    this.exited = new Promise((done) => this.child.once("close", () => done()));
  }

  /** Starts the operator and waits until /readyz says its caches have synced. */
  static async start(options: OperatorProcessOptions): Promise<OperatorProcess> {
    const proc = await OperatorProcess.spawn(options);
    await proc.waitReady();
    return proc;
  }

  /** Starts the operator without waiting for anything. */
  static async spawn(options: OperatorProcessOptions): Promise<OperatorProcess> {
    return new OperatorProcess(options, await freePort());
  }

  /** Waits until /readyz answers 200; kills the process and throws with its last lines if it does not. */
  async waitReady(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (await this.ready()) return;
      if (!this.running || Date.now() > deadline) {
        const why = this.running ? `within ${timeoutMs / 1000} s` : "and exited";
        await this.kill();
        throw new Error(
          `operator ${this.name} did not become ready ${why}:\n${this.lines.slice(-20).join("\n")}`,
        );
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Whether /readyz answers 200: its caches have synced. */
  async ready(): Promise<boolean> {
    try {
      const response = await fetch(`${this.metricsUrl}/readyz`);
      await response.arrayBuffer();
      return response.status === 200;
    } catch {
      return false;
    }
  }

  /** The exit code once it exited by itself (undefined while running, or when killed by a signal). */
  async exitCode(timeoutMs: number): Promise<number | undefined> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.exited, new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
    return this.child.exitCode ?? undefined;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** kill -9, and wait until the process is gone. */
  async kill(): Promise<void> {
    if (this.running) this.child.kill("SIGKILL");
    await this.exited;
  }

  /** SIGTERM: a clean shutdown (SIGKILL after 10 s). */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.child.kill("SIGTERM");
    const killer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    await this.exited;
    clearTimeout(killer);
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * A kubeconfig for a ServiceAccount `operator` of `namespace`, with every right
 * in that namespace only, whose server is `serverUrl` (the API proxy). The
 * token comes from the TokenRequest API, as a pod's would.
 */
export async function serviceAccountKubeconfigVia(serverUrl: string, namespace: string): Promise<string> {
  await kubectl(["create", "serviceaccount", "operator", "-n", namespace]);
  await kubectl([
    "create",
    "rolebinding",
    "operator-admin",
    "-n",
    namespace,
    "--clusterrole=cluster-admin",
    `--serviceaccount=${namespace}:operator`,
  ]);
  const core = adminKubeConfig().makeApiClient(CoreV1Api);
  const request = await core.createNamespacedServiceAccountToken({
    namespace,
    name: "operator",
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const token = request.status?.token;
  if (!token) throw new Error(`no token issued for ServiceAccount ${namespace}/operator`);
  const kc = new KubeConfig();
  kc.loadFromOptions({
    // Plain HTTP on loopback to the proxy (client-node allows http only with this set); the
    // proxy verifies the API server's certificate.
    clusters: [{ name: "proxy", server: serverUrl, skipTLSVerify: true }],
    users: [{ name: "operator", token }],
    contexts: [{ name: "proxy", cluster: "proxy", user: "operator", namespace }],
    currentContext: "proxy",
  });
  const out = join(inject("controlPlaneDir"), `operator-${namespace}.kubeconfig`);
  await writeFile(out, kc.exportConfig(), { mode: 0o600 });
  return out;
}
