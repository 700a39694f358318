// What a ComputeEndpoint's connection Secret needs to know of its branch's resets. A reset from the
// parent replaces the branch's roles (a role comes back with the parent's password, or is re-created
// by the Branch with a new one), so the password a Secret holds may no longer connect: the Secret
// records the reset it was written after (the marker), and a different one means "read it again".
import type { BranchStatus } from "../../api/branch.ts";
import type { Store } from "../../runtime/index.ts";
import type { BranchObject } from "./index.ts";

/**
 * The branch's resets as its Branch has seen them: the platform's `last_reset_at` (whoever reset
 * it) with the annotation value last acted upon (two resets within one second of the platform's
 * timestamps still differ). Undefined: never reset.
 */
export function resetMarker(status: Pick<BranchStatus, "lastResetAt" | "restoredFromParentAt">) {
  const parts = [status.lastResetAt ?? "", status.restoredFromParentAt ?? ""];
  return parts.every((p) => p === "") ? undefined : parts.join(" ");
}

/**
 * The marker to record with a Secret written now, and whether the branch is `settling` (a reset
 * under way, or its roles not back yet: the Branch is not Ready), when a Secret written for an
 * older marker waits instead of reading a role that may be gone. Read from the Branch of the
 * namespace that manages `branchId` (the one `branchRef` names first); none: nothing to follow (a
 * reset made without one is not noticed, as a password changed in the console is not).
 */
export function branchResets(
  branches: Store<BranchObject>,
  namespace: string | undefined,
  branchId: string,
  branchRef: string | undefined,
): { marker: string | undefined; settling: boolean } {
  const named = branchRef === undefined ? undefined : branches.get(namespace, branchRef);
  const manages = (b: BranchObject | undefined) => b?.status?.branchId === branchId;
  const branch = manages(named)
    ? named
    : branches.list(namespace).find((b) => manages(b) && !b.metadata.deletionTimestamp);
  if (!branch?.status) return { marker: undefined, settling: false };
  const ready = branch.status.conditions?.find((c) => c.type === "Ready")?.status === "True";
  return { marker: resetMarker(branch.status), settling: !ready };
}
