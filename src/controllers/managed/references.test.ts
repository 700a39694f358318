// The reference step, with no API server: a field naming another resource of the namespace is
// resolved to its platform id once that resource is Ready, and otherwise says what it waits for.
import { describe, expect, it } from "vitest";
import { BranchSpec, branchKind, type BranchStatus } from "../../api/branch.ts";
import type { KubeObject, Store } from "../../runtime/index.ts";
import { resolveReferences, type Reference } from "./references.ts";

interface BranchObject extends KubeObject {
  spec: BranchSpec;
  status?: BranchStatus;
}
const branchResourceKind = branchKind;

const spec = (fields: Record<string, unknown> = {}) => BranchSpec.parse({ projectId: "proj", ...fields });
type Spec = ReturnType<typeof spec>;
type Status = BranchStatus;

/** A read-only store of Branch resources, as the cache gives one. */
function store(objects: BranchObject[]): Store<KubeObject> {
  const byKey = new Map(objects.map((o) => [`${o.metadata.namespace}/${o.metadata.name}`, o]));
  return {
    get: (namespace: string | undefined, name: string) => byKey.get(`${namespace}/${name}`),
    getByKey: (key: string) => byKey.get(key),
    list: () => [...byKey.values()],
    byIndex: () => [],
  };
}

function resource(name: string, status?: Status, deleting = false): BranchObject {
  return {
    apiVersion: "neoncloud.dev/v1alpha1",
    kind: "Branch",
    metadata: { name, namespace: "team", ...(deleting ? { deletionTimestamp: "2026-11-23T00:00:00Z" } : {}) },
    spec: spec(),
    ...(status ? { status } : {}),
  };
}

const condition = (status: "True" | "False", reason: string, message: string) => ({
  type: "Ready",
  status,
  reason,
  message,
  lastTransitionTime: "2026-11-23T00:00:00Z",
});
const ready = (branchId: string): Status => ({ branchId, conditions: [condition("True", "Available", "")] });

/** A Branch's parent, as the Branch kind declares it: needed only to create the branch. */
const parent: Reference<Spec, Status> = {
  field: "spec.parent.branchRef",
  kind: branchResourceKind,
  name: (s) => s.parent?.branchRef?.name,
  id: (target) => (target as BranchObject).status?.branchId,
  fill: (s, branchId) => ({ ...s, parent: { branchId } }),
  createOnly: true,
};
/** A reference an existing object needs too (a ComputeEndpoint's branch), with its id in status. */
const needed: Reference<Spec, Status> = {
  ...parent,
  field: "spec.branchRef",
  createOnly: false,
  recorded: (s) => s.branchId,
};

const self: KubeObject = { metadata: { name: "feature", namespace: "team", uid: "uid-feature" } };
const resolve = (s: Spec, cached: BranchObject[], refs = [parent], recorded?: Status) =>
  resolveReferences(s, self, "branch", refs, () => store(cached), recorded);

describe("the reference step", () => {
  it("leaves a spec that names no other resource as it is", () => {
    const s = spec({ parent: { branchId: "br-x" } });
    expect(resolve(s, [])).toEqual({ state: "resolved", spec: s });
  });

  it("fills in the id of a Ready resource", () => {
    const s = spec({ parent: { branchRef: { name: "base" } } });
    expect(resolve(s, [resource("base", ready("br-base"))])).toEqual({
      state: "resolved",
      spec: { ...s, parent: { branchId: "br-base" } },
    });
  });

  it.each([
    ["not created yet", [], "spec.parent.branchRef: Branch team/base does not exist yet"],
    [
      "not Ready, saying why",
      [resource("base", { conditions: [condition("False", "Creating", "creating branch br-b")] })],
      "spec.parent.branchRef: Branch team/base is not Ready (Creating: creating branch br-b)",
    ],
    [
      "being deleted",
      [resource("base", ready("br-base"), true)],
      "spec.parent.branchRef: Branch team/base is being deleted",
    ],
  ])("waits for a resource %s", (_, cached, message) => {
    const result = resolve(spec({ parent: { branchRef: { name: "base" } } }), cached);
    expect(result).toMatchObject({ state: "waiting", message, createOnly: true });
  });

  it("holds up an existing object only for a reference it needs beyond its create", () => {
    const s = spec({ parent: { branchRef: { name: "base" } } });
    expect(resolve(s, [], [needed])).toMatchObject({ state: "waiting", createOnly: false });
  });

  it("a resource being deleted takes the id from its status when the other resource went first", () => {
    const s = spec({ parent: { branchRef: { name: "base" } } });
    expect(resolve(s, [], [needed], { branchId: "br-recorded" })).toEqual({
      state: "resolved",
      spec: { ...s, parent: { branchId: "br-recorded" } },
    });
  });
});
