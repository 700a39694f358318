// Builds and runs the local Kubernetes control plane of test/controlplane/ (a
// Go module: embedded etcd + kube-apiserver + a few kube-controller-manager
// controllers) and kubectl of the same release. Used by the test suites and by
// the sandbox; it needs a source checkout and a Go toolchain.
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { createWriteStream, existsSync } from "node:fs";
import { mkdir, readFile, readdir, rename, rm } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

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
  /** SIGTERM, wait for a clean exit (SIGKILL after a deadline). */
  stop(): Promise<void>;
}

type Log = (line: string) => void;

async function kubernetesVersion(): Promise<string> {
  const goMod = await readFile(join(controlPlaneModuleDir, "go.mod"), "utf8");
  const match = /^\s*k8s\.io\/kubernetes\s+(v\S+)/m.exec(goMod);
  if (!match?.[1]) throw new Error(`no k8s.io/kubernetes requirement in ${controlPlaneModuleDir}/go.mod`);
  return match[1];
}

/** The build key: Kubernetes version plus a hash of our Go sources, so an edit rebuilds. */
async function buildKey(version: string): Promise<string> {
  const hash = createHash("sha256");
  const files = (await readdir(controlPlaneModuleDir))
    .filter((f) => f.endsWith(".go") || f === "go.mod" || f === "go.sum")
    .sort();
  for (const f of files) {
    hash.update(f);
    hash.update(await readFile(join(controlPlaneModuleDir, f)));
  }
  return `${version}-${hash.digest("hex").slice(0, 12)}`;
}

export function cacheRoot(): string {
  const base =
    process.env.NEON_CONTROLPLANE_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"));
  return join(base, "neon-cloud-operator", "controlplane");
}

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "inherit", "inherit"] });
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      if (code === 0) resolvePromise();
      else reject(new Error(`${cmd} ${args.join(" ")} failed (${signal ?? `exit ${code}`})`));
    });
  });
}

/** Builds (or finds in the cache) the control plane and kubectl binaries. */
export async function buildControlPlane(
  log: Log = (l) => process.stderr.write(`${l}\n`),
): Promise<ControlPlaneBinaries> {
  const version = await kubernetesVersion();
  const dir = join(cacheRoot(), await buildKey(version));
  const binaries = {
    controlplane: join(dir, "controlplane"),
    kubectl: join(dir, "kubectl"),
    kubernetesVersion: version,
  };
  if (existsSync(binaries.controlplane) && existsSync(binaries.kubectl)) return binaries;

  await mkdir(dir, { recursive: true });
  const [major, minor] = version.replace(/^v/, "").split(".");
  const ldflags = ["-s", "-w"];
  // A module build has no git metadata; stamp the release so /version and
  // kubectl report it (the server's compatibility version derives from it).
  for (const pkg of ["k8s.io/component-base/version", "k8s.io/client-go/pkg/version"]) {
    ldflags.push(
      `-X ${pkg}.gitVersion=${version}`,
      `-X ${pkg}.gitMajor=${major}`,
      `-X ${pkg}.gitMinor=${minor}`,
    );
  }
  // GOTOOLCHAIN=local: never download a toolchain; GOFLAGS=-mod=mod: go.sum pins everything.
  const env = { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: "-mod=mod", CGO_ENABLED: "0" };
  const targets: [string, string][] = [
    [".", binaries.controlplane],
    ["k8s.io/kubernetes/cmd/kubectl", binaries.kubectl],
  ];
  for (const [pkg, out] of targets) {
    log(
      `controlplane: building ${pkg === "." ? "control plane (etcd + kube-apiserver + controllers)" : "kubectl"} ${version} into ${dir}; the first build takes several minutes`,
    );
    const started = Date.now();
    const tmp = `${out}.tmp-${process.pid}`;
    await run(
      "go",
      ["build", "-trimpath", `-ldflags=${ldflags.join(" ")}`, "-o", tmp, pkg],
      controlPlaneModuleDir,
      env,
    );
    await rename(tmp, out);
    log(`controlplane: built ${out} in ${Math.round((Date.now() - started) / 1000)} s`);
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
      await run(binaries.controlplane, args, ready.dir, process.env);
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
