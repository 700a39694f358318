// Snapshot: a branch's data kept at a point. The kind is its schema (src/api/snapshot.ts), its
// details and options below, and its four verbs (adapter.ts) with its plan (plan.ts); everything
// else is the managed layer's. Written on the layer's contract as it stands: no member added.
import { branchKind, type BranchStatus } from "../../api/branch.ts";
import { SnapshotSpec, snapshotKind, type SnapshotStatus } from "../../api/snapshot.ts";
import type { PlatformClient, Snapshot } from "../../platform/index.ts";
import type { KubeObject } from "../../runtime/index.ts";
import { withGrants } from "../access/grants.ts";
import { projectsMadeByProjects } from "../access/made-projects.ts";
import { branchHolder, projectHolder } from "../links/holders.ts";
import { projectReferences } from "../links/project.ts";
import { managed, withReferences, withUses, type Managed } from "../managed/features.ts";
import { withOperations } from "../operations/waiting.ts";
import { resourceKind, type KindControllerOptions } from "../options.ts";
import { Snapshots } from "./adapter.ts";
import type { SnapshotStep } from "./plan.ts";

export interface SnapshotObject extends KubeObject {
  spec: SnapshotSpec;
  status?: SnapshotStatus;
}

export const snapshotResourceKind = resourceKind(snapshotKind);

export const snapshotFinalizer = "neoncloud.dev/snapshot";

type S = SnapshotStatus;

/** The Snapshot kind with its options. */
export function snapshot(
  options: KindControllerOptions,
): Managed<SnapshotSpec, S, Snapshot, SnapshotStep, PlatformClient> {
  return managed(
    {
      resource: { ...snapshotResourceKind, apiVersion: snapshotKind.apiVersion },
      finalizer: snapshotFinalizer,
      spec: SnapshotSpec,
      noun: "snapshot",
      reasonPrefix: "Snapshot",
      idField: "spec.snapshotId",
      policies: (spec) => ({
        management: "Manage",
        // An adopted snapshot is someone's before it is this resource's: kept unless the spec says Delete.
        deletion: spec.deletionPolicy ?? (spec.snapshotId ? "Orphan" : "Delete"),
        credentials: spec.credentials,
        adopts: spec.snapshotId,
        sharedWith: spec.sharedWith,
      }),
      placement: (spec) => ({ projectId: spec.projectId, sourceBranchId: spec.branchId }),
      recorded: (status) => status.snapshotId,
      adapter: new Snapshots(),
    },
    withReferences<SnapshotSpec, S, PlatformClient>(
      ...projectReferences<SnapshotSpec, S>({ switch: "none", on: () => false }, []),
      {
        field: "spec.branchRef",
        kind: resourceKind(branchKind),
        name: (spec) => spec.branchRef?.name,
        id: (branch) => (branch as KubeObject & { status?: BranchStatus }).status?.branchId,
        fill: (spec, branchId) => ({ ...spec, branchId }),
        // Taken, it keeps its data whatever becomes of the Branch.
        createOnly: true,
      },
    ),
    // A snapshot is a copy of a branch's data: another namespace's only with its holder's consent.
    withUses<SnapshotSpec, S, PlatformClient>({
      field: "spec.branchId",
      use: "Derive",
      noun: "branch",
      id: (spec) => spec.branchId,
      createOnly: true,
      holders: [branchHolder, projectHolder],
    }),
    withOperations<SnapshotSpec, S>((spec) => spec.projectId, options.pollIntervalMs ?? 5_000),
    withGrants<SnapshotSpec, S>((spec) => ({ projectId: spec.projectId }), {
      enabled: options.grants !== false,
      madeBy: [projectsMadeByProjects],
    }),
  );
}
