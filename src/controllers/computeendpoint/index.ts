// ComputeEndpoint: a compute endpoint of a branch, kept as its resource declares. The kind is its
// schema (src/api/computeendpoint.ts), its policies and references below, and its adapter
// (adapter.ts) with its plan (plan.ts); everything else is the managed layer's.
import {
  ComputeEndpointSpec,
  computeEndpointKind,
  type ComputeEndpointStatus,
} from "../../api/computeendpoint.ts";
import { branchEndpointOptions } from "../../platform/index.ts";
import type { Controller, KubeObject } from "../../runtime/index.ts";
import { branchResourceKind, type BranchObject } from "../branch/index.ts";
import { configMapKind } from "../managed/connection-configmap.ts";
import { managedController } from "../managed/controller.ts";
import type { ManagedKind } from "../managed/types.ts";
import { resourceKind, type ControllerFactory, type KindControllerOptions } from "../options.ts";
import { projectMaker, projectReferences } from "../project/index.ts";
import { ComputeEndpoints, type ComputeEndpointObject, type ObservedEndpoint } from "./adapter.ts";
import { createSpec } from "./desired.ts";
import type { Plan } from "./plan.ts";

export type { ComputeEndpointObject } from "./adapter.ts";

export const computeEndpointResourceKind = resourceKind(computeEndpointKind);

export const computeEndpointFinalizer = "neoncloud.dev/computeendpoint";

type S = ComputeEndpointStatus;

export function computeEndpointManagedKind(
  options: KindControllerOptions,
): ManagedKind<ComputeEndpointSpec, S, ObservedEndpoint, Plan> {
  return {
    resource: { ...computeEndpointResourceKind, apiVersion: computeEndpointKind.apiVersion },
    finalizer: computeEndpointFinalizer,
    spec: ComputeEndpointSpec,
    noun: "endpoint",
    reasonPrefix: "Endpoint",
    access: (spec) => ({ projectId: spec.projectId }),
    credentials: (spec) => spec.credentials,
    managementPolicy: (spec) => spec.managementPolicy,
    // An adopted endpoint is someone's before it is this resource's: kept unless the spec says Delete.
    deletionPolicy: (spec) => spec.deletionPolicy ?? (spec.endpointId ? "Orphan" : "Delete"),
    adopts: (spec) => spec.endpointId,
    recorded: (status) => status.endpointId,
    projectOf: (spec) => spec.projectId,
    // A branch has one read-write endpoint: two resources must not both create it. A branchRef
    // claims the branch the endpoint is on once it has one. Branch ids are the platform's, unique
    // across projects (and a projectRef's project is not in the stored spec).
    claims: (spec, status) => {
      const branchId = spec.branchId ?? status.branchId;
      return spec.type === "read_write" && branchId ? [`branch:${branchId}`] : [];
    },
    references: [
      // A Project of the namespace: its project, and its default endpoint adopted (no second one).
      ...projectReferences<ComputeEndpointSpec, S>(
        { switch: "defaultEndpoint", on: (spec) => spec.projectRef?.defaultEndpoint === true },
        [
          ["defaultBranchId", "branchId"],
          ["defaultEndpointId", "endpointId"],
        ],
      ),
      {
        field: "spec.branchRef",
        kind: branchResourceKind,
        name: (spec) => spec.branchRef?.name,
        id: (branch) => (branch as BranchObject).status?.branchId,
        fill: (spec, branchId) => ({ ...spec, branchId }),
        recorded: (status) => status.branchId,
        // A Branch reset (or its readiness after one) changes the password its endpoints' Secrets hold.
        wakeById: true,
        // A read-write one is made with its Branch's create, with what the create-branch body takes.
        along: (spec) =>
          spec.type === "read_write" && {
            endpoints: [branchEndpointOptions(createSpec({ ...spec, branchId: "" }, ""))],
          },
      },
    ],
    projectMakers: [projectMaker],
    adapter: new ComputeEndpoints(options.resyncPeriodMs ?? 600_000),
  };
}

/** The ComputeEndpoint controller; `create` lets a Manager own it (default: standalone, for tests). */
export function computeEndpointController(
  options: KindControllerOptions,
  create?: ControllerFactory<ComputeEndpointObject>,
): Controller<ComputeEndpointObject> {
  const { controller } = managedController({
    kind: computeEndpointManagedKind(options),
    options,
    create: create as ControllerFactory<KubeObject> | undefined,
    owns: [configMapKind],
  });
  return controller as unknown as Controller<ComputeEndpointObject>;
}
