// Operator replicas as separate processes (`node src/cli.ts run`), each with
// its output captured to a file of its own, so the logs can be searched for
// key values afterwards. kill() is kill -9: no shutdown hook runs.
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";

const repoRoot = resolve(import.meta.dirname, "..", "..");
const cli = join(repoRoot, "src", "cli.ts");

/** The chaos runs' installation id (managed/installation.ts), given to every replica. */
export const chaosInstallationId = "c4a0c4a0";

export interface OperatorSettings {
  kubeconfig: string;
  platformUrl: string;
  credentialsSecret: string;
  leaseNamespace: string;
  logDir: string;
}

export interface OperatorProcess {
  /** POD_NAME given to the process; its leader-election identity starts with it. */
  name: string;
  logFile: string;
  child: ChildProcess;
  /** Resolves when the process logged "operator started" (it is leader or standing by). */
  started: Promise<void>;
  exited: Promise<void>;
  leaderElection: boolean;
  /** Flags beyond the shared ones (a shard's selector): a replacement gets them too. */
  flags: string[];
  /** Set before we kill or stop it: any other exit is a crash. */
  ending: boolean;
}

export interface Crash {
  name: string;
  logFile: string;
  /** The first line of the process's last words that is not a JSON log line. */
  error: string;
}

export class Operators {
  private count = 0;
  readonly logFiles: string[] = [];
  readonly running = new Set<OperatorProcess>();
  /** Processes that exited on their own; each is replaced at once, as a kubelet restarts a crashed pod. */
  readonly crashes: Crash[] = [];
  /** Told when a crashed process has been replaced, so holders of the old one can switch. */
  onReplaced: (old: OperatorProcess, fresh: OperatorProcess) => void = () => undefined;
  kills = 0;

  private readonly settings: OperatorSettings;

  constructor(settings: OperatorSettings) {
    this.settings = settings;
  }

  /**
   * Starts a replica; `kubeconfig` overrides the shared one (a path of its own to the API server),
   * `flags` are added to the shared ones (a shard's selector and budget share).
   */
  start(leaderElection: boolean, kubeconfig?: string, flags: string[] = []): OperatorProcess {
    const s = this.settings;
    const name = `chaos-op-${++this.count}`;
    const logFile = join(s.logDir, `${name}.log`);
    this.logFiles.push(logFile);
    const args = [
      cli,
      "run",
      `--platform-base-url=${s.platformUrl}`,
      `--default-credentials-secret=${s.credentialsSecret}`,
      `--leader-election=${leaderElection}`,
      `--leader-election-namespace=${s.leaseNamespace}`,
      "--metrics-address=127.0.0.1:0",
      "--log-level=debug",
      "--shutdown-deadline=2s",
      // One installation across every replica and restart, so the owner marks of what it creates
      // are known to the invariants (they compute them as the operator does).
      `--installation-id=${chaosInstallationId}`,
      ...flags,
    ];
    const child = spawn(process.execPath, args, {
      cwd: repoRoot,
      env: {
        ...process.env,
        KUBECONFIG: kubeconfig ?? s.kubeconfig,
        POD_NAME: name,
        POD_NAMESPACE: s.leaseNamespace,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const out = createWriteStream(logFile);
    // A process still writing when the run ends must not crash it over a removed log directory.
    out.on("error", () => undefined);
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    const exited = new Promise<void>((done) =>
      child.once("exit", () => {
        out.end();
        done();
      }),
    );
    void exited.then(() => this.crashed(proc));
    const started = new Promise<void>((done, fail) => {
      createInterface({ input: child.stdout }).on("line", (line) => {
        if (line.includes('"operator started"')) done();
      });
      void exited.then(() => fail(new Error(`${name} exited before it started; see ${logFile}`)));
    });
    started.catch(() => undefined); // a process killed while starting is part of the plan
    const proc: OperatorProcess = {
      name,
      logFile,
      child,
      started,
      exited,
      leaderElection,
      flags,
      ending: false,
    };
    this.running.add(proc);
    void exited.then(() => this.running.delete(proc));
    return proc;
  }

  private async crashed(proc: OperatorProcess): Promise<void> {
    if (proc.ending) return;
    const text = await readFile(proc.logFile, "utf8").catch(() => "");
    const error =
      text
        .split("\n")
        .find((l) => /Error|error:/.test(l) && !l.startsWith("{"))
        ?.trim() ?? `exit ${proc.child.exitCode ?? proc.child.signalCode}`;
    this.crashes.push({ name: proc.name, logFile: proc.logFile, error });
    this.onReplaced(proc, this.start(proc.leaderElection, undefined, proc.flags));
  }

  /** kill -9, and wait until the process is gone. False when it had already exited. */
  async kill(proc: OperatorProcess): Promise<boolean> {
    proc.ending = true;
    const alive = proc.child.exitCode === null && proc.child.signalCode === null;
    if (alive) {
      proc.child.kill("SIGKILL");
      this.kills++;
    }
    await proc.exited;
    return alive;
  }

  /** SIGTERM (a clean shutdown), SIGKILL after a deadline. */
  async stop(proc: OperatorProcess): Promise<void> {
    proc.ending = true;
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
    proc.child.kill("SIGTERM");
    const killer = setTimeout(() => proc.child.kill("SIGKILL"), 10_000);
    await proc.exited;
    clearTimeout(killer);
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.running].map((proc) => this.stop(proc)));
  }
}
