// Builds helm from the Go module proxy (the module test/tools/helm/ pins its
// version and every dependency in go.sum) and caches the binary like the
// control plane: ~/.cache/neon-cloud-operator/tools/helm-<version>-<hash>/helm.
// The deploy tests lint and render the chart with it; no helm install needed.
import { resolve } from "node:path";
import { requirement, stderrLog, type GoTool, type Log } from "../../tools/sandbox/go-build.ts";
import { buildModuleTool, type ToolCache } from "./go-modules.ts";

export const helmModuleDir = resolve(import.meta.dirname, "..", "tools", "helm");

/** Builds (or finds in the cache) helm and returns the binary's path. */
export function buildHelm(log: Log = stderrLog): Promise<string> {
  return buildModuleTool(helmModuleDir, "helm", ["helm.sh/helm/v3"], helmBuild, log);
}

function helmBuild({ goMod, versions: version, dir }: ToolCache): Omit<GoTool, "binary"> {
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
  return {
    pkg: "helm.sh/helm/v3/cmd/helm",
    ldflags,
    describe: `helm: building helm ${version} from the Go module proxy into ${dir}`,
  };
}
