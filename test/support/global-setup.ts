// Vitest global setup of the "cluster" project: builds (once, cached) and
// starts a real control plane, installs the CRDs from crds/, and hands the
// tests the admin kubeconfig. Teardown stops it even when tests fail.
import { execFile } from "node:child_process";
import { mkdir, readdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import type { TestProject } from "vitest/node";
import { startControlPlane, type ControlPlane } from "../../tools/sandbox/controlplane.ts";
import { testGrant } from "./grant.ts";

const exec = promisify(execFile);
const repoRoot = resolve(import.meta.dirname, "..", "..");

declare module "vitest" {
  export interface ProvidedContext {
    kubeconfig: string;
    kubectl: string;
    controlPlaneDir: string;
    controlPlaneBinary: string;
  }
}

let controlPlane: ControlPlane | undefined;

export async function setup(project: TestProject): Promise<() => Promise<void>> {
  const logDir = join(repoRoot, ".tmp");
  await mkdir(logDir, { recursive: true });
  controlPlane = await startControlPlane({ logFile: join(logDir, "controlplane.log") });
  try {
    const crdFiles = (await readdir(join(repoRoot, "crds"))).filter((f) => f.endsWith(".yaml"));
    const kubectl = controlPlane.binaries.kubectl;
    const env = { ...process.env, KUBECONFIG: controlPlane.kubeconfig };
    if (crdFiles.length > 0) {
      await exec(kubectl, ["apply", "--server-side", "-f", join(repoRoot, "crds")], { env });
      await exec(kubectl, ["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"], { env });
    }
    // The namespaces the tests make (createNamespace) may use the operator's default credentials,
    // as a platform team grants its teams' namespaces: by a label (docs/security.md).
    await applyGrant(kubectl, env);
    project.provide("kubeconfig", controlPlane.kubeconfig);
    project.provide("kubectl", kubectl);
    project.provide("controlPlaneDir", controlPlane.dir);
    project.provide("controlPlaneBinary", controlPlane.binaries.controlplane);
  } catch (err) {
    await controlPlane.stop();
    throw err;
  }
  return async () => {
    await controlPlane?.stop();
  };
}

async function applyGrant(kubectl: string, env: NodeJS.ProcessEnv): Promise<void> {
  const child = execFile(kubectl, ["apply", "--server-side", "-f", "-"], { env });
  child.stdin?.end(JSON.stringify(testGrant));
  await new Promise<void>((resolve, reject) =>
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`kubectl apply of the test grant exited ${code}`)),
    ),
  );
}
