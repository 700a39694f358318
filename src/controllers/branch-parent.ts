// Which branch a new Branch is created from: a branch id as given, a branch name looked up in the
// project's list, or another Branch resource of the namespace once it is Ready (read from the
// cache; until then the resource waits, and says for which).
import type { BranchSpec, BranchStatus } from "../api/branch.ts";
import type { Branch } from "../platform/index.ts";
import { objectKey, type KubeObject, type Store } from "../runtime/index.ts";
import { Problem } from "./managed/failures.ts";

export interface BranchObject extends KubeObject {
  spec: BranchSpec;
  status?: BranchStatus;
}

export type ParentResolution =
  { state: "resolved"; parentId: string | undefined } | { state: "waiting"; reason: string; message: string };

/** The Branch resource's platform id once it is Ready, or why it is not usable yet. */
export function readyBranchId(
  branches: Store<BranchObject>,
  namespace: string | undefined,
  name: string,
): { branchId: string } | { waiting: string } {
  const ref = branches.get(namespace, name);
  const key = `${namespace ?? ""}/${name}`;
  if (!ref) return { waiting: `Branch ${key} does not exist yet` };
  if (ref.metadata.deletionTimestamp) return { waiting: `Branch ${key} is being deleted` };
  const ready = ref.status?.conditions?.find((c) => c.type === "Ready");
  const branchId = ref.status?.branchId;
  if (ready?.status !== "True" || !branchId) {
    const why = ready ? `${ready.reason}: ${ready.message}` : "not reconciled yet";
    return { waiting: `Branch ${objectKey(ref)} is not Ready (${why})` };
  }
  return { branchId };
}

/**
 * The parent's branch id (undefined: the project's default branch). `branches` is the project's
 * list when the caller has one (a lookup by name needs it).
 */
export function resolveParent(
  obj: BranchObject,
  spec: BranchSpec,
  cache: Store<BranchObject>,
  branches: readonly Branch[],
): ParentResolution {
  const parent = spec.parent;
  if (!parent) return { state: "resolved", parentId: undefined };
  if (parent.branchId) return { state: "resolved", parentId: parent.branchId };
  if (parent.branchName !== undefined) {
    const found = branches.find((b) => b.name === parent.branchName);
    if (!found) {
      throw new Problem(
        "ParentNotFound",
        `no branch named ${parent.branchName} in project ${spec.projectId}`,
        { retryAfterMs: 60_000, stalled: true },
      );
    }
    return { state: "resolved", parentId: found.id };
  }
  if (parent.branchRef) {
    const ref = readyBranchId(cache, obj.metadata.namespace, parent.branchRef.name);
    if ("waiting" in ref) return { state: "waiting", reason: "WaitingForParent", message: ref.waiting };
    return { state: "resolved", parentId: ref.branchId };
  }
  return { state: "resolved", parentId: undefined };
}
