// The build host's side of `npm run image`: the Debian packages the image
// tooling needs (installed with apt-get when missing), podman's configuration
// for a machine of this kind, and small helpers to run commands.
import { execFile, spawn } from "node:child_process";
import { mkdir, rm, rmdir, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { cacheBase } from "../../tools/sandbox/go-build.ts";

const execFileAsync = promisify(execFile);

/** Runs a command, its output passed through to ours; rejects on a non-zero exit. */
export function run(
  cmd: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "inherit", "inherit"], ...options });
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${cmd} ${args.join(" ")} failed (${signal ?? `exit ${code}`})`));
    });
  });
}

/** Runs a command and returns its stdout. */
export async function output(cmd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<string> {
  const { stdout } = await execFileAsync(cmd, args, { env, maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

/** A loopback port free now (another process could take it before the caller binds it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** The system's directories only: npm puts node_modules/.bin first, where a package may shadow one (`nft`). */
export const systemPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

async function has(command: string): Promise<boolean> {
  try {
    await output("sh", ["-c", `command -v ${command}`], { ...process.env, PATH: systemPath });
    return true;
  } catch {
    return false;
  }
}

/** Installs the Debian packages whose commands are missing (needs root, like the rest of the tooling). */
export async function ensurePackages(packages: Record<string, string>, log = console.error): Promise<void> {
  const missing: string[] = [];
  for (const [command, pkg] of Object.entries(packages)) if (!(await has(command))) missing.push(pkg);
  if (missing.length === 0) return;
  log(`installing Debian packages: ${missing.join(" ")}`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  await run("apt-get", ["update", "-q"], { env });
  await run("apt-get", ["install", "-y", "-q", "--no-install-recommends", ...missing], { env });
}

/** podman, runc (crun refuses hybrid cgroups) and mmdebstrap for a local base. */
export const imagePackages = { podman: "podman", runc: "runc", mmdebstrap: "mmdebstrap" };

/** Where the image tooling keeps its storage, configuration and bases. */
export function containersDir(): string {
  return join(cacheBase(), "containers");
}

/**
 * podman's environment: its own storage under the cache, runc, cgroupfs, and
 * default ulimits at or below the hard limits the sandbox lets a process have
 * (containers fail with "setrlimit RLIMIT_NOFILE" above them).
 */
export async function podmanEnv(): Promise<NodeJS.ProcessEnv> {
  const dir = containersDir();
  await mkdir(dir, { recursive: true });
  const containersConf = join(dir, "containers.conf");
  const storageConf = join(dir, "storage.conf");
  await writeFile(
    containersConf,
    [
      "[containers]",
      'default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]',
      // No network unless asked for: podman's default bridge would add a
      // device, firewall rules and /run/netns to the host and let a container
      // reach beyond it. Builds and tests that need one say --network=host.
      'netns = "none"',
      "[engine]",
      'runtime = "runc"',
      'cgroup_manager = "cgroupfs"',
      'events_logger = "file"',
      `tmp_dir = "${join(dir, "tmp")}"`,
      "",
    ].join("\n"),
  );
  await writeFile(
    storageConf,
    [
      "[storage]",
      'driver = "overlay"',
      `graphroot = "${join(dir, "storage")}"`,
      `runroot = "${join(dir, "run")}"`,
      "",
    ].join("\n"),
  );
  return { ...process.env, CONTAINERS_CONF: containersConf, CONTAINERS_STORAGE_CONF: storageConf };
}

/**
 * Paths outside its own directories that podman and runc write whatever they
 * are told: runc's state directory, podman's blob-info cache, the CNI lock.
 */
export const podmanHostPaths = ["/run/runc", "/var/lib/containers/cache", "/etc/cni/net.d/cni.lock"];

/** Removes podmanHostPaths once no container of ours runs (podman recreates them when needed). */
export async function cleanHost(env: NodeJS.ProcessEnv): Promise<void> {
  if ((await output("podman", ["ps", "--quiet"], env).catch(() => "")).trim() !== "") return;
  for (const path of podmanHostPaths) await rm(path, { recursive: true, force: true });
  await rmdir("/var/lib/containers").catch(() => undefined); // only if empty
}
