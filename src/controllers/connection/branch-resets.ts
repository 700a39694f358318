// What a connection Secret follows of its branch's resets. A reset from the parent replaces the
// branch's roles (back with the parent's password, or re-created with a new one), so the Secret
// records the reset it was written after (the marker); a different one means "read it again". The
// marker is read from the Branch of the namespace managing the branch (a follow: no wait, and its
// changes wake the resource); no Branch: nothing to follow (a reset made without one is not
// noticed, as a password changed in the console is not).
import { branchKind, type BranchStatus } from "../../api/branch.ts";
import type { KubeObject } from "../../runtime/index.ts";
import type { Follow } from "../managed/references.ts";
import { resourceKind } from "../options.ts";

/** The branch's last reset, and whether a Secret written for an older one must wait. */
export interface BranchResets {
  marker: string | undefined;
  /** The Branch is not Ready: its roles may not be back yet. */
  settling: boolean;
}

/**
 * The platform's `last_reset_at` (whoever reset the branch) with the annotation value last acted
 * upon (two resets within one second of the platform's timestamps still differ); none: never reset.
 */
export function resetMarker(status: BranchStatus): string | undefined {
  const parts = [status.lastResetAt ?? "", status.restoredFromParentAt ?? ""];
  return parts.every((p) => p === "") ? undefined : parts.join(" ");
}

/** What the Branch managing the branch says of its resets (none: no Branch). */
export function resetsOf(branch: (KubeObject & { status?: BranchStatus }) | undefined): BranchResets {
  const status = branch?.status;
  if (!status) return { marker: undefined, settling: false };
  const ready = status.conditions?.find((c) => c.type === "Ready")?.status === "True";
  return { marker: resetMarker(status), settling: !ready };
}

/** The follow: the Branch managing the branch a resource's endpoint is on lends it its resets. */
export function followBranchResets<
  Spec extends { branchId?: string | undefined; branchResets?: BranchResets | undefined },
  Status extends { branchId?: string | undefined },
>(): Follow<Spec, Status> {
  return {
    kind: resourceKind(branchKind),
    id: (spec, status) => spec.branchId ?? status.branchId,
    manages: (branch) => (branch as KubeObject & { status?: BranchStatus }).status?.branchId,
    fill: (spec, branch) => ({ ...spec, branchResets: resetsOf(branch) }),
  };
}
