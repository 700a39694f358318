// Argo CD's own CRDs (Application, ApplicationSet), so the preview-environment example is
// validated by the schema Argo CD installs rather than by ours: taken from Argo CD's Go module
// through the module proxy at a pinned version, checked by `go mod download` against the Go
// checksum database and against the hash pinned here, and kept in the Go module cache (one
// 56 MB download per machine).
import { join, resolve } from "node:path";
import { stderrLog, type Log } from "../../tools/sandbox/go-build.ts";
import { downloadModule } from "./go-modules.ts";
import { eventually, kubectl } from "./kube.ts";

export const argoCdModule = "github.com/argoproj/argo-cd/v3";
export const argoCdVersion = "v3.5.7";
/** The module's hash in the Go checksum database (go.sum's `h1:` form). */
const argoCdSum = "h1:Xm1BF+I5OgDKUG3SDK49vn2/Y5AMyaNVko+/JT08gj0=";

/** A module whose go.mod names the Go release the project builds with. */
const goModuleDir = resolve(import.meta.dirname, "..", "tools", "gitops");

/** The paths of Argo CD's Application and ApplicationSet CRDs, downloaded once. */
export async function argoCdCrdFiles(log: Log = stderrLog): Promise<string[]> {
  const dir = await downloadModule(argoCdModule, argoCdVersion, argoCdSum, goModuleDir, log);
  return ["application-crd.yaml", "applicationset-crd.yaml"].map((f) => join(dir, "manifests", "crds", f));
}

/**
 * Installs them on the test API server (server-side apply: the ApplicationSet CRD is larger than
 * the annotation a client-side apply keeps) and waits until they serve.
 */
export async function installArgoCdCrds(): Promise<void> {
  const files = await argoCdCrdFiles();
  await kubectl([
    "apply",
    "--server-side",
    "--force-conflicts",
    "--field-manager=argocd-crds-for-tests",
    ...files.flatMap((f) => ["-f", f]),
  ]);
  // Served once established: kubectl's discovery lists both (a wait on the condition can find
  // a CRD with no conditions yet).
  await eventually(
    async () => {
      const names = (await kubectl(["api-resources", "--api-group=argoproj.io", "-o", "name"])).split("\n");
      const served = ["applications.argoproj.io", "applicationsets.argoproj.io"].every((n) =>
        names.includes(n),
      );
      return served ? true : undefined;
    },
    { what: "Argo CD's CRDs served", intervalMs: 200, timeoutMs: 60_000 },
  );
}
