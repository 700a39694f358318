// Which resources hold the branches and projects other resources may use (managed/uses.ts), read
// from the API types: a Branch holds the branch it made or adopted; a Project holds its project
// and that project's default branch. Each shares what it holds as its spec.sharedWith says.
import { branchKind, type BranchSpec, type BranchStatus } from "../../api/branch.ts";
import { projectKind, type ProjectSpec, type ProjectStatus } from "../../api/project.ts";
import { snapshotKind, type SnapshotSpec, type SnapshotStatus } from "../../api/snapshot.ts";
import type { KubeObject } from "../../runtime/index.ts";
import type { Holder } from "../managed/uses.ts";
import { resourceKind } from "../options.ts";

type Of<Spec, Status> = KubeObject & { spec?: Partial<Spec>; status?: Status };
const defined = (ids: (string | undefined)[]) => ids.filter((id): id is string => id !== undefined);

export const branchHolder: Holder = {
  kind: resourceKind(branchKind),
  holds: (obj) => {
    const b = obj as Of<BranchSpec, BranchStatus>;
    return defined([b.status?.branchId ?? b.spec?.branchId]);
  },
  sharedWith: (obj) => (obj as Of<BranchSpec, BranchStatus>).spec?.sharedWith ?? [],
};

/** A Project holds its project, and that project's default branch (platform ids never collide). */
export const projectHolder: Holder = {
  kind: resourceKind(projectKind),
  holds: (obj) => {
    const p = obj as Of<ProjectSpec, ProjectStatus>;
    return defined([p.status?.projectId ?? p.spec?.projectId, p.status?.defaultBranchId]);
  },
  sharedWith: (obj) => (obj as Of<ProjectSpec, ProjectStatus>).spec?.sharedWith ?? [],
};

/** A Snapshot holds the snapshot it took or adopted. */
export const snapshotHolder: Holder = {
  kind: resourceKind(snapshotKind),
  holds: (obj) => {
    const s = obj as Of<SnapshotSpec, SnapshotStatus>;
    return defined([s.status?.snapshotId ?? s.spec?.snapshotId]);
  },
  sharedWith: (obj) => (obj as Of<SnapshotSpec, SnapshotStatus>).spec?.sharedWith ?? [],
};
