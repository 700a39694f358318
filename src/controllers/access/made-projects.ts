// Projects a Project created (not adopted) are its namespace's: confirmed on the platform by the
// Project's owner mark on the project's default branch, which only the operator writes.
import { projectKind, type ProjectSpec, type ProjectStatus } from "../../api/project.ts";
import { NotFoundError } from "../../platform/index.ts";
import type { KubeObject } from "../../runtime/index.ts";
import { ownerAnnotation } from "../managed/installation.ts";
import { outside } from "../managed/refusal.ts";
import { resourceKind } from "../options.ts";
import type { ProjectMaker } from "./grants.ts";

/** How old a list of a project's branches may be to read the mark on its default branch. */
const markAge = 600_000;

export const projectsMadeByProjects: ProjectMaker = {
  kind: resourceKind(projectKind),
  created: (obj: KubeObject) => {
    const project = obj as KubeObject & { spec?: ProjectSpec; status?: ProjectStatus };
    return project.spec?.projectId === undefined ? project.status?.projectId : undefined;
  },
  async confirm(client, projectId, mark, signal) {
    signal.throwIfAborted();
    // The annotations are set at creation and never change: any list of the project shows them,
    // except one a branch change's answer updated (answers carry none): that one is read again.
    const marked = async (maxAgeMs: number) => {
      const branches = await client.branchSnapshot(projectId, { maxAgeMs });
      return branches.find((b) => b.default)?.annotations;
    };
    try {
      const annotations = (await marked(markAge)) ?? (await marked(0));
      return annotations?.[ownerAnnotation] === mark;
    } catch (err) {
      if (err instanceof NotFoundError) throw outside("ProjectNotFound", `project ${projectId} not found`);
      throw err;
    }
  },
};
