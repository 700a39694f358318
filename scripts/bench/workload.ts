// The workload: projects with one branch per endpoint-to-be (each endpoint is a
// branch's read-write endpoint), and the ComputeEndpoint manifests, applied all
// at once by server-side apply of one multi-document file.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Lab } from "./lab.ts";

export interface Placement {
  name: string;
  projectId: string;
  branchId: string;
}

/** `endpoints` spread round-robin over `projects`; each gets a branch of its own. */
export function placements(endpoints: number, projects: number, prefix: string): Placement[] {
  return Array.from({ length: endpoints }, (_, i) => {
    const p = i % projects;
    const b = Math.floor(i / projects);
    return { name: `${prefix}-${i}`, projectId: `${prefix}-p${p}`, branchId: `br-${prefix}-p${p}-b${b}` };
  });
}

/** The emulator seed: every project with the branches its endpoints use. */
export function seedFor(all: readonly Placement[], projectIds: readonly string[]) {
  return {
    projects: projectIds.map((id) => ({
      id,
      name: id,
      branches: all.filter((p) => p.projectId === id).map((p) => ({ id: p.branchId, name: p.branchId })),
    })),
  };
}

export function manifest(
  p: Placement,
  namespace: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    apiVersion: "neoncloud.dev/v1alpha1",
    kind: "ComputeEndpoint",
    metadata: { name: p.name, namespace },
    spec: { projectId: p.projectId, branchId: p.branchId, type: "read_write", ...extra },
  };
}

/** Server-side apply of every manifest from one file; returns how long kubectl took. */
export async function applyAll(
  lab: Lab,
  workDir: string,
  file: string,
  manifests: readonly Record<string, unknown>[],
): Promise<number> {
  const path = join(workDir, file);
  await writeFile(path, manifests.map((m) => JSON.stringify(m)).join("\n---\n"));
  const started = Date.now();
  await lab.kubectl(["apply", "--server-side", "--field-manager=bench", "-f", path]);
  return Date.now() - started;
}
