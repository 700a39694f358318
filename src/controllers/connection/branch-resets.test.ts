// Which reset of its branch a connection Secret must follow, read from the Branch resources of the
// namespace (the follow the ComputeEndpoint kind declares), without an API server.
import { describe, expect, it } from "vitest";
import type { BranchSpec, BranchStatus } from "../../api/branch.ts";
import type { KubeObject, Store } from "../../runtime/index.ts";
import { applyFollows, managesIndex } from "../managed/references.ts";
import { followBranchResets, resetMarker, type BranchResets } from "./branch-resets.ts";

interface BranchObject extends KubeObject {
  spec: BranchSpec;
  status?: BranchStatus;
}
type Spec = { branchId?: string; branchResets?: BranchResets };
const follow = followBranchResets<Spec, { branchId?: string }>();

/** What a ComputeEndpoint on branch `branchId` in `namespace` is lent. */
function branchResets(branches: Store<KubeObject>, namespace: string, branchId: string) {
  return applyFollows<Spec, { branchId?: string }>({ branchId }, {}, namespace, [follow], () => branches)
    .branchResets;
}

function branchResource(
  name: string,
  status: NonNullable<BranchObject["status"]>,
  ready: "True" | "False" = "True",
): BranchObject {
  const condition = {
    type: "Ready",
    status: ready,
    reason: ready === "True" ? "Available" : "Restoring",
    message: "",
    lastTransitionTime: "2026-11-23T05:00:00Z",
  };
  return {
    apiVersion: "neoncloud.dev/v1alpha1",
    kind: "Branch",
    metadata: { name, namespace: "ns" },
    spec: { projectId: "p", deletionPolicy: "Delete" },
    status: { ...status, conditions: [condition] },
  };
}

/** The Branch cache, with the index the controller adds for the follow. */
function store(...objects: BranchObject[]): Store<KubeObject> {
  const key = (o: KubeObject) => `${o.metadata.namespace ?? ""}/${o.metadata.name ?? ""}`;
  return {
    get: (ns, name) => objects.find((o) => o.metadata.namespace === ns && o.metadata.name === name),
    getByKey: (k) => objects.find((o) => key(o) === k),
    list: (ns) => objects.filter((o) => ns === undefined || o.metadata.namespace === ns),
    byIndex: (index, value) =>
      index === managesIndex(follow.kind)
        ? objects.filter((o) => `${o.metadata.namespace ?? ""}/${follow.manages(o) ?? ""}` === value).map(key)
        : [],
  };
}

describe("the reset a connection Secret follows", () => {
  it("is the platform's last reset with the annotation value acted upon; none when never reset", () => {
    expect(resetMarker({})).toBeUndefined();
    expect(resetMarker({ lastResetAt: "2026-11-23T05:00:00Z" })).toBe("2026-11-23T05:00:00Z ");
    // Two resets within a second of the platform's timestamps still differ.
    expect(resetMarker({ lastResetAt: "2026-11-23T05:00:00Z", restoredFromParentAt: "a" })).not.toBe(
      resetMarker({ lastResetAt: "2026-11-23T05:00:00Z", restoredFromParentAt: "b" }),
    );
  });

  it("is read from the Branch of the namespace managing the branch id, whatever its name", () => {
    const reset = { branchId: "br-1", lastResetAt: "2026-11-23T05:00:00Z", restoredFromParentAt: "x" };
    const branches = store(branchResource("preview", reset));
    expect(branchResets(branches, "ns", "br-1")).toEqual({
      marker: "2026-11-23T05:00:00Z x",
      settling: false,
    });
    // Another namespace's Branch, or another branch: nothing known.
    expect(branchResets(branches, "other", "br-1")).toEqual({ marker: undefined, settling: false });
    expect(branchResets(branches, "ns", "br-2")).toEqual({ marker: undefined, settling: false });
  });

  it("is settling while the Branch is not Ready (its roles may not be back yet)", () => {
    const branches = store(branchResource("preview", { branchId: "br-1", lastResetAt: "t" }, "False"));
    expect(branchResets(branches, "ns", "br-1")).toEqual({ marker: "t ", settling: true });
  });
});
