// Builds helm from the Go module proxy (the module test/tools/helm/ pins its
// version and every dependency in go.sum) and caches the binary like the
// control plane: ~/.cache/neon-cloud-operator/tools/helm-<version>-<hash>/helm.
// The deploy tests lint and render the chart with it; no helm install needed.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, open, readFile, readdir, rename, rm } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { cacheRoot } from "../../src/sandbox/controlplane.ts";

export const helmModuleDir = resolve(import.meta.dirname, "..", "tools", "helm");

type Log = (line: string) => void;

function requirement(goMod: string, module: string): string {
  const escaped = module.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  const match = new RegExp(`^\\s*(?:require\\s+)?${escaped}\\s+(v\\S+)`, "m").exec(goMod);
  if (!match?.[1]) throw new Error(`no ${module} requirement in ${helmModuleDir}/go.mod`);
  return match[1];
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

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Test files run in parallel workers; one of them builds while the others
 * wait for its binary. A lock left by a process that died is taken over.
 */
async function buildOnce(binary: string, build: () => Promise<void>): Promise<void> {
  const lock = `${binary}.lock`;
  for (;;) {
    if (existsSync(binary)) return;
    try {
      const handle = await open(lock, "wx");
      await handle.writeFile(String(process.pid));
      await handle.close();
      try {
        if (!existsSync(binary)) await build();
        return;
      } finally {
        await rm(lock, { force: true });
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const holder = Number(await readFile(lock, "utf8").catch(() => ""));
      if (holder > 0 && !isAlive(holder)) await rm(lock, { force: true });
      else await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** Builds (or finds in the cache) helm and returns the binary's path. */
export async function buildHelm(log: Log = (l) => process.stderr.write(`${l}\n`)): Promise<string> {
  const goMod = await readFile(join(helmModuleDir, "go.mod"), "utf8");
  const version = requirement(goMod, "helm.sh/helm/v3");
  const hash = createHash("sha256");
  for (const f of (await readdir(helmModuleDir)).filter((f) => f === "go.mod" || f === "go.sum").sort()) {
    hash.update(f);
    hash.update(await readFile(join(helmModuleDir, f)));
  }
  const dir = join(dirname(cacheRoot()), "tools", `helm-${version}-${hash.digest("hex").slice(0, 12)}`);
  const binary = join(dir, "helm");
  if (existsSync(binary)) return binary;
  await mkdir(dir, { recursive: true });

  await buildOnce(binary, async () => {
    // What helm's Makefile stamps: its version, and the Kubernetes version it
    // assumes for `template` and `lint` (client-go's minor, major + 1), so a
    // chart's kubeVersion constraint is checked against a current release.
    const [clientMajor, clientMinor] = requirement(goMod, "k8s.io/client-go").replace(/^v/, "").split(".");
    const ldflags = ["-s", "-w", `-X helm.sh/helm/v3/internal/version.version=${version}`];
    ldflags.push("-X helm.sh/helm/v3/internal/version.metadata=");
    for (const pkg of ["helm.sh/helm/v3/pkg/lint/rules", "helm.sh/helm/v3/pkg/chartutil"]) {
      ldflags.push(
        `-X ${pkg}.k8sVersionMajor=${Number(clientMajor) + 1}`,
        `-X ${pkg}.k8sVersionMinor=${clientMinor}`,
      );
    }
    log(
      `helm: building helm ${version} from the Go module proxy into ${dir}; the first build takes a minute or two`,
    );
    const started = Date.now();
    const tmp = `${binary}.tmp-${process.pid}`;
    // GOTOOLCHAIN=local: never download a toolchain; GOFLAGS=-mod=mod: go.sum pins everything.
    const env = { ...process.env, GOTOOLCHAIN: "local", GOFLAGS: "-mod=mod", CGO_ENABLED: "0" };
    await run(
      "go",
      ["build", "-trimpath", `-ldflags=${ldflags.join(" ")}`, "-o", tmp, "helm.sh/helm/v3/cmd/helm"],
      helmModuleDir,
      env,
    );
    await rename(tmp, binary);
    log(`helm: built ${binary} in ${Math.round((Date.now() - started) / 1000)} s`);
  });
  return binary;
}
