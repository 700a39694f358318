// The operator's image, built from the Dockerfile by `npm run image` and run by
// podman as deploy/ runs it: uid 65532, read-only root filesystem, no
// capabilities. It talks to a real control plane and the emulator over the
// host's loopback.
import { execFile } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { chmod, copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildImage, type ImageBuild } from "../../scripts/image/main.ts";
import { cleanHost, ensurePackages, freePort, podmanEnv, podmanHostPaths } from "../../scripts/image/host.ts";
import { startControlPlane, type ControlPlane } from "../../tools/sandbox/controlplane.ts";
import { startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import { eventually } from "../support/kube.ts";

const exec = promisify(execFile);
const repoRoot = resolve(import.meta.dirname, "..", "..");
let image: ImageBuild;
let env: NodeJS.ProcessEnv;
let controlPlane: ControlPlane | undefined;
let emulator: Emulator | undefined;
let work: string | undefined;
const containers: string[] = [];

const podman = async (...args: string[]): Promise<string> =>
  (await exec("podman", args, { env, maxBuffer: 16 * 1024 * 1024 })).stdout;

/** Every path in the tree under `root`, relative to it. */
function walk(root: string, dir = ""): string[] {
  const paths: string[] = [];
  for (const name of readdirSync(join(root, dir))) {
    const rel = join(dir, name);
    paths.push(rel);
    const stat = statSync(join(root, rel), { throwIfNoEntry: false });
    if (stat?.isDirectory() && !statSync(join(root, rel)).isSymbolicLink()) paths.push(...walk(root, rel));
  }
  return paths;
}

beforeAll(async () => {
  await ensurePackages({ nft: "nftables" }); // to read the host's firewall afterwards
  image = await buildImage({ tag: "localhost/neon-cloud-operator:e2e" });
  env = await podmanEnv();
  process.stdout.write(
    `image ${image.tag}: ${(image.size / 1e6).toFixed(1)} MB on ${image.bases.runtime}, ${image.seconds.toFixed(1)} s\n`,
  );
});

afterAll(async () => {
  for (const name of containers) await podman("rm", "--force", "--time", "0", name).catch(() => "");
  await emulator?.close();
  await controlPlane?.stop();
  if (work) await rm(work, { recursive: true, force: true });
  await cleanHost(env);
  for (const path of [
    ...podmanHostPaths,
    "/var/lib/containers",
    "/var/lib/cni",
    "/run/libpod",
    "/run/containers",
  ]) {
    expect(existsSync(path), `${path} left behind`).toBe(false);
  }
  // Containers got the host's network or none: podman set up no bridge, no
  // firewall rules and no network namespaces on the host.
  const links = readdirSync("/sys/class/net").join(" ");
  expect(links).not.toMatch(/cni-podman|podman\d|veth/);
  // The system's nft, not node_modules/.bin/nft (a file tracer of the same name).
  const firewall = (await exec("/usr/sbin/nft", ["list", "ruleset"])).stdout;
  expect(firewall).not.toMatch(/CNI|NETAVARK|PODMAN/i);
});

describe("the operator's image", () => {
  it("holds node, its libraries, CA certificates and the operator: no shell, no package manager, no tools or tests", async () => {
    const root = (await podman("image", "mount", image.tag)).trim();
    try {
      const paths = walk(root);
      expect(paths).toContain("nodejs/bin/node");
      expect(paths).toContain("app/dist/cli.js");
      expect(paths).toContain("app/node_modules/@kubernetes/client-node/package.json");
      expect(readdirSync(join(root, "app")).sort()).toEqual(["crds", "dist", "node_modules", "package.json"]);
      const forbidden = paths.filter((p) =>
        /(^|\/)(sh|bash|dash|busybox|apt|apt-get|dpkg|npm|npx|yarn|corepack)$/.test(p),
      );
      expect(forbidden).toEqual([]);
      expect(paths.filter((p) => /^app\/dist\/(tools|test|emulator|sandbox)\b/.test(p))).toEqual([]);
      expect(paths.filter((p) => p.startsWith("app/node_modules/vitest"))).toEqual([]);
      // The build secrets (host npm config, CA bundle) left nothing behind.
      expect(paths.filter((p) => p.startsWith("run/secrets") || p.endsWith(".npmrc"))).toEqual([]);
      const config = JSON.parse(await podman("image", "inspect", image.tag)) as [
        { Config: { User: string; Entrypoint: string[] } },
      ];
      expect(config[0].Config.User).toBe("65532:65532");
      expect(config[0].Config.Entrypoint.slice(0, 1)).toEqual(["node"]);
    } finally {
      await podman("image", "unmount", image.tag);
    }
    await expect(
      podman("run", "--rm", "--network=none", "--entrypoint", "/bin/sh", image.tag, "-c", "true"),
    ).rejects.toThrow(/\/bin\/sh.*no such file/);
    expect(image.size).toBeLessThanOrEqual(200e6);
  });

  it("derives Node's heap limit from the container's memory limit", async () => {
    const figures = async (memory: string) =>
      JSON.parse(
        await podman(
          "run",
          "--rm",
          "--network=none",
          "--memory",
          memory,
          "--entrypoint",
          "node",
          image.tag,
          "-p",
          "JSON.stringify({ limit: process.constrainedMemory(), heap: v8.getHeapStatistics().heap_size_limit })",
        ),
      ) as { limit: number; heap: number };
    const small = await figures("256m");
    const large = await figures("1g");
    process.stdout.write(
      `heap limit: ${(small.heap / 2 ** 20).toFixed(0)} MiB at a 256 MiB limit, ${(large.heap / 2 ** 20).toFixed(0)} MiB at 1 GiB\n`,
    );
    expect(small.limit).toBe(256 * 2 ** 20);
    expect(large.limit).toBe(2 ** 30);
    expect(large.heap).toBeGreaterThan(small.heap);
  });

  it("runs as deployed: reaches the API server, answers /healthz, exits 0 on SIGTERM", async () => {
    controlPlane = await startControlPlane();
    await exec(controlPlane.binaries.kubectl, ["apply", "--server-side", "-f", join(repoRoot, "crds")], {
      env: { ...process.env, KUBECONFIG: controlPlane.kubeconfig },
    });
    emulator = await startEmulator({ rateLimits: false });
    // The container's user must read the kubeconfig; a copy in a directory of our own.
    work = await mkdtemp(join(tmpdir(), "neon-image-e2e-"));
    await chmod(work, 0o755);
    await copyFile(controlPlane.kubeconfig, join(work, "kubeconfig"));
    await chmod(join(work, "kubeconfig"), 0o644);
    const port = await freePort();
    const name = `neon-image-e2e-${process.pid}`;
    containers.push(name);
    await podman(
      "run",
      "--detach",
      "--name",
      name,
      "--network=host",
      "--read-only",
      "--tmpfs=/tmp",
      "--cap-drop=ALL",
      "--security-opt=no-new-privileges",
      "--memory=256m",
      `--volume=${work}/kubeconfig:/config/kubeconfig:ro`,
      "--env=KUBECONFIG=/config/kubeconfig",
      `--env=NEON_OPERATOR_PLATFORM_BASE_URL=${emulator.url}`,
      "--env=NEON_OPERATOR_LEADER_ELECTION=false",
      `--env=NEON_OPERATOR_METRICS_ADDRESS=127.0.0.1:${port}`,
      "--env=NEON_OPERATOR_NAMESPACES=image-e2e-none",
      image.tag,
    );
    await eventually(
      async () => {
        const res = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined);
        return res?.status === 200 ? true : undefined;
      },
      { what: "/healthz of the operator in its container", timeoutMs: 60_000, intervalMs: 250 },
    );
    expect(await podman("exec", name, "node", "-p", "process.getuid()")).toBe("65532\n");
    await podman("stop", "--time", "20", name);
    expect((await podman("inspect", "--format", "{{.State.ExitCode}}", name)).trim()).toBe("0");
    expect(await podman("logs", name)).toContain("operator started");
  });
});
