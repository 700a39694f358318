// Builds helm from the Go module proxy (the module test/tools/helm/ pins its
// version and every dependency in go.sum) and caches the binary like the
// control plane: ~/.cache/neon-cloud-operator/tools/helm-<version>-<hash>/helm.
// The deploy tests lint and render the chart with it; no helm install needed.
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import {
  buildGoTools,
  cacheBase,
  moduleHash,
  requirement,
  stderrLog,
  type Log,
} from "../../tools/sandbox/go-build.ts";

export const helmModuleDir = resolve(import.meta.dirname, "..", "tools", "helm");

/** Builds (or finds in the cache) helm and returns the binary's path. */
export async function buildHelm(log: Log = stderrLog): Promise<string> {
  const goMod = await readFile(join(helmModuleDir, "go.mod"), "utf8");
  const version = requirement(goMod, "helm.sh/helm/v3");
  const dir = join(cacheBase(), "tools", `helm-${version}-${await moduleHash(helmModuleDir)}`);
  const binary = join(dir, "helm");
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
  await buildGoTools(
    helmModuleDir,
    [
      {
        pkg: "helm.sh/helm/v3/cmd/helm",
        binary,
        ldflags,
        describe: `helm: building helm ${version} from the Go module proxy into ${dir}`,
      },
    ],
    log,
  );
  return binary;
}
