// Builds and runs the local Kubernetes control plane of test/controlplane/ (a
// Go module: embedded etcd + kube-apiserver + a few kube-controller-manager
// controllers) and kubectl of the same release. Used by the test suites and by
// the sandbox; it needs a source checkout (Go comes from PATH, or is fetched:
// go-toolchain.ts).
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, existsSync } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { buildGoTools, cacheBase, moduleHash, requirement, stderrLog, type Log } from "./go-build.ts";

const execFileAsync = promisify(execFile);

export const controlPlaneModuleDir = resolve(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "..",
  "test",
  "controlplane",
);

export interface ControlPlaneBinaries {
  controlplane: string;
  kubectl: string;
  kubernetesVersion: string;
}

export interface ControlPlane {
  /** Admin kubeconfig (system:masters). */
  kubeconfig: string;
  server: string;
  version: string;
  /** State directory: certificates, etcd data, kubeconfigs. Removed on stop. */
  dir: string;
  binaries: ControlPlaneBinaries;
  /** Writes a kubeconfig that authenticates as `user` in `groups` and returns its path. */
  mintUser(user: string, groups?: string[]): Promise<string>;
  /** SIGTERM, wait for a clean exit (about 1 s; SIGKILL after a deadline). */
  stop(): Promise<void>;
}

async function kubernetesVersion(): Promise<string> {
  const goMod = await readFile(join(controlPlaneModuleDir, "go.mod"), "utf8");
  return requirement(goMod, "k8s.io/kubernetes");
}

export function cacheRoot(): string {
  return join(cacheBase(), "controlplane");
}

/** Where the binaries built from the control plane's module (at its current hash) are cached. */
export async function controlPlaneBinDir(): Promise<{ dir: string; version: string }> {
  const version = await kubernetesVersion();
  return { dir: join(cacheRoot(), `${version}-${await moduleHash(controlPlaneModuleDir)}`), version };
}

/**
 * A module build has no git metadata; stamp the release so /version and
 * kubectl report it (the server's compatibility version derives from it).
 */
export function kubernetesLdflags(version: string): string[] {
  const [major, minor] = version.replace(/^v/, "").split(".");
  const ldflags = ["-s", "-w"];
  for (const pkg of ["k8s.io/component-base/version", "k8s.io/client-go/pkg/version"]) {
    ldflags.push(
      `-X ${pkg}.gitVersion=${version}`,
      `-X ${pkg}.gitMajor=${major}`,
      `-X ${pkg}.gitMinor=${minor}`,
    );
  }
  return ldflags;
}

/** Builds (or finds in the cache) the control plane and kubectl binaries. */
export async function buildControlPlane(log: Log = stderrLog): Promise<ControlPlaneBinaries> {
  const { dir, version } = await controlPlaneBinDir();
  const binaries = {
    controlplane: join(dir, "controlplane"),
    kubectl: join(dir, "kubectl"),
    kubernetesVersion: version,
  };
  const ldflags = kubernetesLdflags(version);
  const missing = [binaries.controlplane, binaries.kubectl].some((b) => !existsSync(b));
  const started = Date.now();
  if (missing) {
    // Measured on a 2-core machine with nothing cached: Go fetched in 6 s, modules in 8 s, the
    // control plane compiled in 7 min 16 s, kubectl in 52 s (502 s in all).
    log(
      `controlplane: first start: building Kubernetes ${version} (etcd, kube-apiserver, controllers, kubectl) ` +
        `from source, once: about 8 minutes on 2 cores, less with more; later starts reuse the build in ${dir}`,
    );
  }
  await buildGoTools(
    controlPlaneModuleDir,
    [
      {
        pkg: ".",
        binary: binaries.controlplane,
        ldflags,
        describe: `controlplane: etcd + kube-apiserver + controllers ${version}`,
        expect: "about 7 minutes on 2 cores",
      },
      {
        pkg: "k8s.io/kubernetes/cmd/kubectl",
        binary: binaries.kubectl,
        ldflags,
        describe: `controlplane: kubectl ${version}`,
        expect: "about 1 minute on 2 cores",
      },
    ],
    log,
  );
  if (missing) {
    log(
      `controlplane: the build is done (${Math.round((Date.now() - started) / 1000)} s); later starts skip it`,
    );
  }
  return binaries;
}

interface ReadyLine {
  kubeconfig: string;
  server: string;
  version: string;
  dir: string;
}

/**
 * Starts a fresh control plane on a free loopback port. Component logs go to
 * `logFile` when given (they are verbose), otherwise they are dropped.
 */
export async function startControlPlane(
  options: { logFile?: string; log?: Log; startTimeoutMs?: number } = {},
): Promise<ControlPlane> {
  const binaries = await buildControlPlane(options.log);
  const child: ChildProcess = spawn(binaries.controlplane, ["serve", "--exit-on-stdin-close"], {
    // stdin stays open as a lifeline: if this process dies, the control plane exits.
    stdio: ["pipe", "pipe", options.logFile ? "pipe" : "ignore"],
  });
  if (options.logFile && child.stderr) child.stderr.pipe(createWriteStream(options.logFile));
  const exited = new Promise<void>((res) => child.once("exit", () => res()));

  const ready = await new Promise<ReadyLine>((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`control plane did not start within ${options.startTimeoutMs ?? 120_000} ms`));
    }, options.startTimeoutMs ?? 120_000);
    const lines = createInterface({ input: child.stdout! });
    lines.once("line", (line) => {
      clearTimeout(timer);
      try {
        resolvePromise(JSON.parse(line) as ReadyLine);
      } catch {
        reject(new Error(`control plane printed an unexpected line: ${line}`));
      }
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(
        new Error(
          `control plane exited before it was ready (${signal ?? `exit ${code}`})${options.logFile ? `; see ${options.logFile}` : ""}`,
        ),
      );
    });
  });

  let mintCount = 0;
  return {
    ...ready,
    binaries,
    async mintUser(user, groups = []) {
      const out = join(ready.dir, `user-${++mintCount}.kubeconfig`);
      const args = ["mint-user", "--dir", ready.dir, "--user", user, "--out", out];
      for (const g of groups) args.push("--group", g);
      await execFileAsync(binaries.controlplane, args, { cwd: ready.dir });
      return out;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const killer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      await exited;
      clearTimeout(killer);
      // The Go side removes its temporary directory; after a SIGKILL it could not.
      await rm(ready.dir, { recursive: true, force: true });
    },
  };
}
