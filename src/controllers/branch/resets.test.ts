// Which reset of its branch a connection Secret must follow, read from the Branch resources of the
// namespace, without an API server.
import { describe, expect, it } from "vitest";
import type { Store } from "../../runtime/index.ts";
import type { BranchObject } from "./index.ts";
import { branchResets, resetMarker } from "./resets.ts";

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

function store(...objects: BranchObject[]): Store<BranchObject> {
  return {
    get: (ns, name) => objects.find((o) => o.metadata.namespace === ns && o.metadata.name === name),
    getByKey: () => undefined,
    list: (ns) => objects.filter((o) => ns === undefined || o.metadata.namespace === ns),
    byIndex: () => [],
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

  it("is read from the Branch named by branchRef, or the one managing the branch id", () => {
    const reset = { branchId: "br-1", lastResetAt: "2026-11-23T05:00:00Z", restoredFromParentAt: "x" };
    const branches = store(branchResource("preview", reset));
    expect(branchResets(branches, "ns", "br-1", "preview")).toEqual({
      marker: "2026-11-23T05:00:00Z x",
      settling: false,
    });
    expect(branchResets(branches, "ns", "br-1", undefined)).toEqual({
      marker: "2026-11-23T05:00:00Z x",
      settling: false,
    });
    // Another namespace's Branch, or another branch: nothing known.
    expect(branchResets(branches, "other", "br-1", undefined)).toEqual({
      marker: undefined,
      settling: false,
    });
    expect(branchResets(branches, "ns", "br-2", undefined)).toEqual({ marker: undefined, settling: false });
  });

  it("is settling while the Branch is not Ready (its roles may not be back yet)", () => {
    const branches = store(branchResource("preview", { branchId: "br-1", lastResetAt: "t" }, "False"));
    expect(branchResets(branches, "ns", "br-1", "preview")).toEqual({ marker: "t ", settling: true });
  });
});
