// Project: a project on the platform, kept as its resource declares. The kind is its schema
// (src/api/project.ts), its policies below, and its adapter (adapter.ts) with its plan (plan.ts);
// everything else is the managed layer's. Branch and ComputeEndpoint name a Project with
// `projectRef` (and adopt its default branch and endpoint); `projectMaker` lets them act, on the
// operator's default credentials, in a project a Project of their namespace created.
import { ProjectSpec, projectKind, type ProjectStatus } from "../../api/project.ts";
import { NotFoundError } from "../../platform/index.ts";
import type { Controller, KubeObject } from "../../runtime/index.ts";
import { notFound } from "../managed/errors.ts";
import { managedController } from "../managed/controller.ts";
import type { ManagedKind, ProjectMaker, Reference } from "../managed/types.ts";
import { resourceKind, type ControllerFactory, type KindControllerOptions } from "../options.ts";
import { Projects, type ObservedProject } from "./adapter.ts";
import { ownerAnnotation, type Plan } from "./plan.ts";

export interface ProjectObject extends KubeObject {
  spec: ProjectSpec;
  status?: ProjectStatus;
}

export const projectResourceKind = resourceKind(projectKind);

export const projectFinalizer = "neoncloud.dev/project";

/** How old a list of a project's branches may be to read the mark on its default branch. */
const markAge = 600_000;

function projectManagedKind(
  options: KindControllerOptions,
): ManagedKind<ProjectSpec, ProjectStatus, ObservedProject, Plan> {
  return {
    resource: { ...projectResourceKind, apiVersion: projectKind.apiVersion },
    finalizer: projectFinalizer,
    spec: ProjectSpec,
    noun: "project",
    reasonPrefix: "Project",
    // Adopting needs the project granted; creating needs createProjects (and then keeps needing it).
    access: (spec) => (spec.projectId ? { projectId: spec.projectId } : { createProject: true }),
    credentials: (spec) => spec.credentials,
    managementPolicy: (spec) => spec.managementPolicy,
    // Deleting data is deliberate: only a spec that says Delete deletes the project.
    deletionPolicy: (spec) => spec.deletionPolicy ?? "Orphan",
    adopts: (spec) => spec.projectId,
    recorded: (status) => status.projectId,
    projectOf: (spec, status) => spec.projectId ?? status.projectId,
    adapter: new Projects(options),
  };
}

/** The Project controller; `create` lets a Manager own it (default: standalone, for tests). */
export function projectController(
  options: KindControllerOptions,
  create?: ControllerFactory<ProjectObject>,
): Controller<ProjectObject> {
  const { controller } = managedController({
    kind: projectManagedKind(options),
    options,
    create: create as ControllerFactory<KubeObject> | undefined,
  });
  return controller as unknown as Controller<ProjectObject>;
}

/**
 * Projects a Project created (not adopted) are its namespace's: confirmed on the platform by the
 * Project's owner mark on the project's default branch, which only the operator writes.
 */
export const projectMaker: ProjectMaker = {
  kind: projectResourceKind,
  created: (obj) => {
    const project = obj as Partial<ProjectObject>;
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
      if (err instanceof NotFoundError) throw notFound("ProjectNotFound", `project ${projectId} not found`);
      throw err;
    }
  },
};

/**
 * The references of a resource naming a Project (`spec.projectRef`): its project id, and with the
 * switch `adopt` the defaults it takes over, each a Project status field filled into a spec field
 * (and found in its own status when the Project went first).
 */
export function projectReferences<Spec extends { projectRef?: { name: string } | undefined }, Status>(
  adopt: { switch: string; on(spec: Spec): boolean },
  defaults: readonly (readonly [keyof ProjectStatus, keyof Spec & keyof Status])[],
): Reference<Spec, Status>[] {
  const byId = (field: keyof ProjectStatus) => (project: KubeObject) =>
    (project as ProjectObject).status?.[field] as string | undefined;
  return [
    {
      field: "spec.projectRef",
      kind: projectResourceKind,
      name: (spec) => spec.projectRef?.name,
      id: byId("projectId"),
      fill: (spec, projectId) => ({ ...spec, projectId }),
    },
    ...defaults.map(([from, to]): Reference<Spec, Status> => ({
      field: `spec.projectRef.${adopt.switch}`,
      kind: projectResourceKind,
      name: (spec) => (adopt.on(spec) ? spec.projectRef?.name : undefined),
      id: byId(from),
      fill: (spec, id) => ({ ...spec, [to]: id }),
      recorded: (status) => status[to] as string | undefined,
    })),
  ];
}
