// Branch: a branch of a project, created from its parent, kept as its resource declares. The kind
// is its schema (src/api/branch.ts), its details and options below, and its four verbs
// (adapter.ts) with its plan (plan.ts); everything else is the managed layer's. A ComputeEndpoint
// naming it can ride along in its create: the registry adds that option (src/controllers/registry.ts).
import { BranchSpec, branchKind, type BranchStatus } from "../../api/branch.ts";
import { snapshotKind, type SnapshotStatus } from "../../api/snapshot.ts";
import type { PlatformClient } from "../../platform/index.ts";
import type { KubeObject } from "../../runtime/index.ts";
import { withGrants } from "../access/grants.ts";
import { projectsMadeByProjects } from "../access/made-projects.ts";
import { branchHolder, projectHolder, snapshotHolder } from "../links/holders.ts";
import { projectReferences } from "../links/project.ts";
import { managed, withReferences, withUses, type Managed, type Option } from "../managed/features.ts";
import { withOperations } from "../operations/waiting.ts";
import { resourceKind, type KindControllerOptions } from "../options.ts";
import { Branches, type Step } from "./adapter.ts";
import type { ObservedBranch } from "./plan.ts";

export interface BranchObject extends KubeObject {
  spec: BranchSpec;
  status?: BranchStatus;
}

export const branchResourceKind = resourceKind(branchKind);

export const branchFinalizer = "neoncloud.dev/branch";

type S = BranchStatus;

/**
 * The platform's create of a masked (anonymized) branch makes its read-write endpoint, asked or
 * not (docs/emulator.md): the registry hands it to a ComputeEndpoint naming the Branch.
 */
export const comesWithReadWriteEndpoint = (spec: BranchSpec): boolean => spec.masking !== undefined;

/** The Branch kind with its options (and any the registry adds). */
export function branch(
  options: KindControllerOptions,
  ...more: Option<BranchSpec, S, PlatformClient>[]
): Managed<BranchSpec, S, ObservedBranch, Step, PlatformClient> {
  return managed(
    {
      resource: { ...branchResourceKind, apiVersion: branchKind.apiVersion },
      finalizer: branchFinalizer,
      spec: BranchSpec,
      noun: "branch",
      reasonPrefix: "Branch",
      idField: "spec.branchId",
      policies: (spec) => ({
        management: "Manage",
        // An adopted branch is someone's before it is this resource's: kept unless the spec says Delete.
        deletion: spec.deletionPolicy ?? (spec.branchId ? "Orphan" : "Delete"),
        credentials: spec.credentials,
        adopts: spec.branchId,
        sharedWith: spec.sharedWith,
      }),
      placement: (spec) => ({ projectId: spec.projectId }),
      recorded: (status) => status.branchId,
      adapter: new Branches(options),
    },
    withReferences<BranchSpec, S, PlatformClient>(
      // A Project of the namespace: its project, and its default branch adopted (no second one).
      ...projectReferences<BranchSpec, S>(
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
        fill: (spec, parentId) => ({
          ...spec,
          parent: { ...spec.parent, branchRef: undefined, branchId: parentId },
        }),
        createOnly: true,
      },
      {
        // A Snapshot of the namespace to start from, once it is Ready.
        field: "spec.parent.snapshotRef",
        kind: resourceKind(snapshotKind),
        name: (spec) => spec.parent?.snapshotRef?.name,
        id: (s) => (s as KubeObject & { status?: SnapshotStatus }).status?.snapshotId,
        fill: (spec, snapshotId) => ({ ...spec, parent: { snapshotId } }),
        createOnly: true,
      },
    ),
    // A new branch is a copy of its parent's data (by id, or the project's default branch when it
    // names none): another namespace's only with its holder's consent. Made, it stays made.
    withUses<BranchSpec, S, PlatformClient>(
      {
        field: "spec.parent.branchId",
        use: "Derive",
        noun: "branch",
        id: (spec) => spec.parent?.branchId,
        createOnly: true,
        holders: [branchHolder, projectHolder],
      },
      {
        field: "spec.parent.snapshotId",
        use: "Derive",
        noun: "snapshot",
        id: (spec) => spec.parent?.snapshotId,
        createOnly: true,
        holders: [snapshotHolder],
      },
      {
        field: "spec.projectId",
        use: "Derive",
        noun: "project",
        id: (spec) => (spec.parent === undefined && spec.branchId === undefined ? spec.projectId : undefined),
        createOnly: true,
        holders: [projectHolder],
      },
    ),
    withOperations<BranchSpec, S>((spec) => spec.projectId, options.pollIntervalMs ?? 5_000),
    withGrants<BranchSpec, S>((spec) => ({ projectId: spec.projectId }), {
      enabled: options.grants !== false,
      madeBy: [projectsMadeByProjects],
    }),
    ...more,
  );
}
