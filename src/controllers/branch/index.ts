// Branch: a branch of a project, kept as its resource declares. The kind is its schema
// (src/api/branch.ts), its policies and references below, and its adapter (adapter.ts) with its
// plan (plan.ts); everything else is the managed layer's.
import { BranchSpec, branchKind, type BranchStatus } from "../../api/branch.ts";
import type { Controller, KubeObject } from "../../runtime/index.ts";
import { computeEndpointManagedKind } from "../computeendpoint/index.ts";
import { managedController } from "../managed/controller.ts";
import type { ManagedKind } from "../managed/types.ts";
import { resourceKind, type ControllerFactory, type KindControllerOptions } from "../options.ts";
import { projectMaker, projectReferences } from "../project/index.ts";
import { Branches } from "./adapter.ts";
import type { BranchStep, ObservedBranch } from "./plan.ts";

export interface BranchObject extends KubeObject {
  spec: BranchSpec;
  status?: BranchStatus;
}

export const branchResourceKind = resourceKind(branchKind);

export const branchFinalizer = "neoncloud.dev/branch";

function branchManagedKind(
  options: KindControllerOptions,
): ManagedKind<BranchSpec, BranchStatus, ObservedBranch, BranchStep> {
  return {
    resource: { ...branchResourceKind, apiVersion: branchKind.apiVersion },
    finalizer: branchFinalizer,
    spec: BranchSpec,
    noun: "branch",
    reasonPrefix: "Branch",
    access: (spec) => ({ projectId: spec.projectId }),
    credentials: (spec) => spec.credentials,
    managementPolicy: () => "Manage",
    // An adopted branch is someone's before it is this resource's: kept unless the spec says Delete.
    deletionPolicy: (spec) => spec.deletionPolicy ?? (spec.branchId ? "Orphan" : "Delete"),
    adopts: (spec) => spec.branchId,
    recorded: (status) => status.branchId,
    projectOf: (spec) => spec.projectId,
    references: [
      // A Project of the namespace: its project, and its default branch adopted (no second one).
      ...projectReferences<BranchSpec, BranchStatus>(
        { switch: "defaultBranch", on: (spec) => spec.projectRef?.defaultBranch === true },
        [["defaultBranchId", "branchId"]],
      ),
      {
        // Another Branch of the namespace to create from, once it is Ready; an existing branch
        // no longer needs its parent resource.
        field: "spec.parent.branchRef",
        kind: branchResourceKind,
        name: (spec) => spec.parent?.branchRef?.name,
        id: (parent) => (parent as BranchObject).status?.branchId,
        fill: (spec, parentId) => ({ ...spec, parent: { branchId: parentId } }),
        createOnly: true,
      },
    ],
    projectMakers: [projectMaker],
    children: () => [computeEndpointManagedKind(options)], // its create makes their endpoint (docs/branch.md)
    adapter: new Branches(options),
  };
}

/**
 * The Branch controller. `create` lets a Manager own it; by default it is a standalone
 * Controller (tests).
 */
export function branchController(
  options: KindControllerOptions,
  create?: ControllerFactory<BranchObject>,
): Controller<BranchObject> {
  const { controller } = managedController({
    kind: branchManagedKind(options),
    options,
    create: create as ControllerFactory<KubeObject> | undefined,
  });
  return controller as unknown as Controller<BranchObject>;
}
