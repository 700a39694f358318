// `spec.projectRef`, as a Branch or a ComputeEndpoint declares it: a Project of the namespace whose
// project the resource acts in, read from the Project's status once it is Ready; with the switch
// that adopts the Project's defaults (its default branch, its default endpoint), each a Project
// status field filled into a spec field (and found in the resource's own status when the Project
// went first).
import { projectKind, type ProjectStatus } from "../../api/project.ts";
import type { KubeObject } from "../../runtime/index.ts";
import type { Reference } from "../managed/references.ts";
import { resourceKind } from "../options.ts";

export const projectResource = resourceKind(projectKind);

export function projectReferences<Spec extends { projectRef?: { name: string } | undefined }, Status>(
  adopt: { switch: string; on(spec: Spec): boolean },
  defaults: readonly (readonly [keyof ProjectStatus, keyof Spec & keyof Status])[],
): Reference<Spec, Status>[] {
  const byId = (field: keyof ProjectStatus) => (project: KubeObject) =>
    (project as KubeObject & { status?: ProjectStatus }).status?.[field] as string | undefined;
  return [
    {
      field: "spec.projectRef",
      kind: projectResource,
      name: (spec) => spec.projectRef?.name,
      id: byId("projectId"),
      fill: (spec, projectId) => ({ ...spec, projectId }),
    },
    ...defaults.map(([from, to]): Reference<Spec, Status> => ({
      field: `spec.projectRef.${adopt.switch}`,
      kind: projectResource,
      name: (spec) => (adopt.on(spec) ? spec.projectRef?.name : undefined),
      id: byId(from),
      fill: (spec, id) => ({ ...spec, [to]: id }),
      recorded: (status) => status[to] as string | undefined,
    })),
  ];
}
