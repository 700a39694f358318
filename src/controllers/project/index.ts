// Project: a project on the platform, kept as its resource declares. The kind is its schema
// (src/api/project.ts), its details and options below, and its four verbs (adapter.ts) with its
// plan (plan.ts); everything else is the managed layer's. Branch and ComputeEndpoint name a
// Project with `projectRef` (src/controllers/links/project.ts), and may act, on the operator's
// default credentials, in a project a Project of their namespace created
// (src/controllers/access/made-projects.ts).
import { ProjectSpec, projectKind, type ProjectStatus } from "../../api/project.ts";
import type { PlatformClient } from "../../platform/index.ts";
import type { KubeObject } from "../../runtime/index.ts";
import { withGrants } from "../access/grants.ts";
import { managed, withConnectionPublishing, type Managed } from "../managed/features.ts";
import { withOperations } from "../operations/waiting.ts";
import { resourceKind, type KindControllerOptions } from "../options.ts";
import { Projects, type ObservedProject, type ProjectStep } from "./adapter.ts";

export interface ProjectObject extends KubeObject {
  spec: ProjectSpec;
  status?: ProjectStatus;
}

export const projectResourceKind = resourceKind(projectKind);

export const projectFinalizer = "neoncloud.dev/project";

type S = ProjectStatus;

/** The Project kind with its options. */
export function project(
  options: KindControllerOptions,
): Managed<ProjectSpec, S, ObservedProject, ProjectStep, PlatformClient> {
  return managed(
    {
      resource: { ...projectResourceKind, apiVersion: projectKind.apiVersion },
      finalizer: projectFinalizer,
      spec: ProjectSpec,
      noun: "project",
      reasonPrefix: "Project",
      idField: "spec.projectId",
      policies: (spec) => ({
        management: spec.managementPolicy,
        // Deleting data is deliberate: only a spec that says Delete deletes the project.
        deletion: spec.deletionPolicy ?? "Orphan",
        credentials: spec.credentials,
        adopts: spec.projectId,
        sharedWith: spec.sharedWith,
      }),
      recorded: (status) => status.projectId,
      adapter: new Projects(options),
    },
    // The project the resource waits in is the one it made (recorded) or adopted.
    withOperations<ProjectSpec, S>(
      (spec, status) => spec.projectId ?? status.projectId,
      options.pollIntervalMs ?? 5_000,
    ),
    // Adopting needs the project granted; creating needs createProjects (and then keeps needing it).
    withGrants<ProjectSpec, S>(
      (spec) => (spec.projectId ? { projectId: spec.projectId } : { createProject: true }),
      {
        enabled: options.grants !== false,
      },
    ),
    withConnectionPublishing(),
  );
}
