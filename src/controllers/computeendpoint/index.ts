// ComputeEndpoint: a compute endpoint of a branch, kept as its resource declares. The kind is its
// schema (src/api/computeendpoint.ts), its details and options below, and its four verbs
// (adapter.ts) with its plan (plan.ts); everything else is the managed layer's.
import { branchKind, type BranchStatus } from "../../api/branch.ts";
import { computeEndpointKind, type ComputeEndpointStatus } from "../../api/computeendpoint.ts";
import { ComputeEndpointSpec } from "../../api/computeendpoint.ts";
import { branchEndpointOptions, type PlatformClient } from "../../platform/index.ts";
import type { KubeObject } from "../../runtime/index.ts";
import { projectsMadeByProjects } from "../access/made-projects.ts";
import { withGrants } from "../access/grants.ts";
import { followBranchResets } from "../connection/branch-resets.ts";
import { branchHolder, projectHolder } from "../links/holders.ts";
import { projectReferences } from "../links/project.ts";
import { carriedChild, type CarriedChild } from "../managed/carried.ts";
import {
  managed,
  withUses,
  withClaims,
  withConnectionPublishing,
  withFollows,
  withReferences,
  type Managed,
} from "../managed/features.ts";
import { Refusal } from "../managed/refusal.ts";
import type { Reference } from "../managed/references.ts";
import { withOperations } from "../operations/waiting.ts";
import { resourceKind, type KindControllerOptions } from "../options.ts";
import { ComputeEndpoints, type EndpointStep, type ObservedEndpoint, type Spec } from "./adapter.ts";
import { createSpec } from "./desired.ts";

export type { ComputeEndpointObject } from "./adapter.ts";

export const computeEndpointResourceKind = resourceKind(computeEndpointKind);

export const computeEndpointFinalizer = "neoncloud.dev/computeendpoint";

type S = ComputeEndpointStatus;

const references: Reference<Spec, S>[] = [
  // A Project of the namespace: its project, and its default endpoint adopted (no second one).
  ...projectReferences<Spec, S>(
    { switch: "defaultEndpoint", on: (spec) => spec.projectRef?.defaultEndpoint === true },
    [
      ["defaultBranchId", "branchId"],
      ["defaultEndpointId", "endpointId"],
    ],
  ),
  {
    field: "spec.branchRef",
    kind: resourceKind(branchKind),
    name: (spec) => spec.branchRef?.name,
    id: (branch) => (branch as KubeObject & { status?: BranchStatus }).status?.branchId,
    fill: (spec, branchId) => ({ ...spec, branchId }),
    recorded: (status) => status.branchId,
    // A read-write one is made with its Branch's create, with what the create-branch body takes.
    carried: {
      body: (spec) =>
        spec.type === "read_write"
          ? { endpoints: [branchEndpointOptions(createSpec({ ...spec, branchId: "" }, ""))] }
          : undefined,
      handedOver: (spec) => ({ ...spec, madeWithBranch: true }),
    },
  },
];

/** The project a ComputeEndpoint acts in, once its references are resolved. */
const projectOf = (spec: Spec) => spec.projectId;

/** The ComputeEndpoint kind with its options. */
export function computeEndpoint(
  options: KindControllerOptions,
): Managed<Spec, S, ObservedEndpoint, EndpointStep, PlatformClient> {
  return managed(
    {
      resource: { ...computeEndpointResourceKind, apiVersion: computeEndpointKind.apiVersion },
      finalizer: computeEndpointFinalizer,
      spec: ComputeEndpointSpec,
      noun: "endpoint",
      reasonPrefix: "Endpoint",
      idField: "spec.endpointId",
      policies: (spec) => ({
        management: spec.managementPolicy,
        // An adopted endpoint is someone's before it is this resource's: kept unless the spec says Delete.
        deletion: spec.deletionPolicy ?? (spec.endpointId ? "Orphan" : "Delete"),
        credentials: spec.credentials,
        adopts: spec.endpointId,
        sharedWith: spec.sharedWith,
      }),
      placement: (spec) => ({ projectId: spec.projectId, branchId: spec.branchId }),
      recorded: (status) => status.endpointId,
      adapter: new ComputeEndpoints(options.resyncPeriodMs ?? 600_000),
    },
    withReferences(...references),
    // An endpoint on a branch another namespace holds reads its data and its roles' passwords.
    withUses<Spec, S, PlatformClient>({
      field: "spec.branchId",
      use: "Attach",
      noun: "branch",
      id: (spec, status) => spec.branchId ?? status.branchId,
      holders: [branchHolder, projectHolder],
    }),
    // A Branch reset (or its readiness after one) changes the password the endpoint's Secret holds.
    withFollows(followBranchResets<Spec, S>()),
    // A branch has one read-write endpoint: two resources must not both create it. A branchRef
    // claims the branch the endpoint is on once it has one. Branch ids are the platform's, unique
    // across projects (and a projectRef's project is not in the stored spec).
    withClaims({
      of: (spec, status) => {
        const branchId = spec.branchId ?? status.branchId;
        return spec.type === "read_write" && branchId ? [`branch:${branchId}`] : [];
      },
      refused: (spec, _claim, rival) =>
        new Refusal(
          "BranchHasReadWriteEndpoint",
          "outside",
          `${rival ?? "a resource in another namespace"} already claims the read-write endpoint of branch ${spec.branchId ?? ""}`,
        ),
    }),
    withOperations<Spec, S>(projectOf, options.pollIntervalMs ?? 5_000),
    withGrants<Spec, S>((spec) => ({ projectId: spec.projectId }), {
      enabled: options.grants !== false,
      madeBy: [projectsMadeByProjects],
    }),
    withConnectionPublishing(),
  );
}

/** The ComputeEndpoint as a child a Branch's create can make (for the Branch's `withCarried`). */
export function computeEndpointCarried(
  m: Managed<Spec, S, ObservedEndpoint, EndpointStep, PlatformClient>,
): CarriedChild {
  return carriedChild(m.kind, m.features.references as unknown as Reference<never, never>[], projectOf);
}
