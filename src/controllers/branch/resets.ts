// What a ComputeEndpoint's connection Secret needs to know of its branch's resets. A reset from
// the parent replaces the branch's roles: a role the parent has comes back with the parent's
// password, a role it lacks is re-created by the Branch with a new one. Either way the password
// the Secret holds may no longer connect, so the Secret records the reset it was written after
// (this marker), and a different one means "read the password again".
import type { BranchStatus } from "../../api/branch.ts";
import type { Store } from "../../runtime/index.ts";
import type { BranchObject } from "./index.ts";

/**
 * The branch's resets as its Branch resource has seen them: the platform's `last_reset_at` (whoever
 * reset it) with the annotation value last acted upon (two resets within one second of the
 * platform's timestamps still differ). Undefined: never reset.
 */
export function resetMarker(
  status: Pick<BranchStatus, "lastResetAt" | "restoredFromParentAt">,
): string | undefined {
  const parts = [status.lastResetAt ?? "", status.restoredFromParentAt ?? ""];
  return parts.every((p) => p === "") ? undefined : parts.join(" ");
}

/** Where the connection Secret's branch stands. */
export interface BranchResets {
  /** The marker to record with a Secret written now. */
  marker: string | undefined;
  /**
   * A reset is under way, or its roles are not back yet (the Branch is not Ready): a Secret
   * written for an older marker waits for the Branch instead of reading a role that may be gone.
   */
  settling: boolean;
}

/**
 * The Branch resource of the namespace that manages `branchId` (the one named by `branchRef`
 * first), and what it says of resets. No Branch resource: no marker, nothing to wait for (a reset
 * made without one is not noticed, as a password changed in the console is not).
 */
export function branchResets(
  branches: Store<BranchObject>,
  namespace: string | undefined,
  branchId: string,
  branchRef: string | undefined,
): BranchResets {
  const named = branchRef === undefined ? undefined : branches.get(namespace, branchRef);
  const branch =
    named?.status?.branchId === branchId
      ? named
      : branches
          .list(namespace)
          .find((b) => b.status?.branchId === branchId && !b.metadata.deletionTimestamp);
  if (!branch?.status) return { marker: undefined, settling: false };
  const ready = branch.status.conditions?.find((c) => c.type === "Ready")?.status === "True";
  return { marker: resetMarker(branch.status), settling: !ready };
}
