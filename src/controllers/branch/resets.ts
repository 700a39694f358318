// What a ComputeEndpoint's connection Secret follows of its branch's resets. A reset from the parent
// replaces the branch's roles (back with the parent's password, or re-created with a new one), so the
// Secret records the reset it was written after (the marker); a different one means "read it again".
import type { BranchStatus } from "../../api/branch.ts";
import type { Store } from "../../runtime/index.ts";
import type { BranchObject } from "./index.ts";

/**
 * The platform's `last_reset_at` (whoever reset the branch) with the annotation value last acted
 * upon (two resets within one second of the platform's timestamps still differ); none: never reset.
 */
export function resetMarker(status: BranchStatus): string | undefined {
  const parts = [status.lastResetAt ?? "", status.restoredFromParentAt ?? ""];
  return parts.every((p) => p === "") ? undefined : parts.join(" ");
}

/**
 * The marker, read from the Branch of the namespace that manages `branchId` (the one `branchRef`
 * names first), and whether a Secret written for an older one must wait (`settling`: the Branch is
 * not Ready, its roles may not be back yet). No Branch: nothing to follow (a reset made without one
 * is not noticed, as a password changed in the console is not).
 */
export function branchResets(
  branches: Store<BranchObject>,
  namespace: string | undefined,
  branchId: string,
  branchRef: string | undefined,
): { marker: string | undefined; settling: boolean } {
  const manages = (b: BranchObject | undefined) => b?.status?.branchId === branchId;
  const named = branchRef === undefined ? undefined : branches.get(namespace, branchRef);
  const branch = manages(named)
    ? named
    : branches.list(namespace).find((b) => manages(b) && !b.metadata.deletionTimestamp);
  if (!branch?.status) return { marker: undefined, settling: false };
  const ready = branch.status.conditions?.find((c) => c.type === "Ready")?.status === "True";
  return { marker: resetMarker(branch.status), settling: !ready };
}
