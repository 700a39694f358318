// A child made with its parent's create (children.ts), with the kinds that use it: which
// ComputeEndpoint's read-write endpoint a Branch's create makes, what the create carries, what the
// Branch's status records, how that record is recovered, and which resource it hands the endpoint to.
import { describe, expect, it } from "vitest";
import { BranchSpec, type BranchStatus } from "../../api/branch.ts";
import { ComputeEndpointSpec } from "../../api/computeendpoint.ts";
import type { KubeObject, ResourceKind, Store } from "../../runtime/index.ts";
import { branchResourceKind } from "../branch/index.ts";
import { computeEndpointManagedKind, computeEndpointResourceKind } from "../computeendpoint/index.ts";
import type { KindControllerOptions } from "../options.ts";
import { childIndex, childToCreate, handedOver, parentsOf, recoverChild } from "./children.ts";
import { ownerMark } from "./installation.ts";
import type { ManagedKind, Pass, Step } from "./types.ts";

const installation = "0a1b2c3d";
const endpointKind = computeEndpointManagedKind({ resyncPeriodMs: 600_000 } as KindControllerOptions);
const branchKind = {
  resource: { ...branchResourceKind, apiVersion: "neoncloud.dev/v1alpha1" },
  credentials: (spec: BranchSpec) => spec.credentials,
  projectOf: (spec: BranchSpec) => spec.projectId,
  children: () => [endpointKind],
  adapter: { annotationsOf: (b: { annotations?: Record<string, string> }) => b.annotations },
} as unknown as ManagedKind<BranchSpec, BranchStatus, { annotations?: Record<string, string> }, Step>;

interface Ce extends KubeObject {
  spec: Record<string, unknown>;
  status?: { endpointId?: string };
}

function ce(name: string, spec: Record<string, unknown>, more: Partial<Ce> = {}): Ce {
  return {
    apiVersion: "neoncloud.dev/v1alpha1",
    kind: "ComputeEndpoint",
    metadata: { name, namespace: "team", uid: `uid-${name}`, creationTimestamp: "2026-11-26T00:00:00Z" },
    spec: ComputeEndpointSpec.parse({ projectId: "proj", branchRef: { name: "preview" }, ...spec }),
    ...more,
  };
}

/** The ComputeEndpoint cache of the Branch controller, with the index the layer gives it. */
function store(objects: KubeObject[]): Store<KubeObject> {
  const key = (o: KubeObject) => `${o.metadata.namespace}/${o.metadata.name}`;
  const byKey = new Map(objects.map((o) => [key(o), o]));
  const parents = parentsOf(endpointKind, branchResourceKind);
  return {
    get: (namespace, name) => byKey.get(`${namespace}/${name}`),
    getByKey: (k) => byKey.get(k),
    list: () => [...byKey.values()],
    byIndex: (index, value) =>
      index === childIndex(computeEndpointResourceKind)
        ? objects.filter((o) => parents(o).includes(value)).map(key)
        : [],
  };
}

function pass(endpoints: Ce[], spec: Record<string, unknown> = {}, status: BranchStatus = {}) {
  return {
    obj: {
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "Branch",
      metadata: { name: "preview", namespace: "team" },
    },
    spec: BranchSpec.parse({ projectId: "proj", ...spec }),
    status,
    deleting: false,
    mark: ownerMark(installation, "Branch", "team", "preview"),
    cache: () => store(endpoints),
  } as unknown as Pass<BranchSpec, BranchStatus>;
}

const markOf = (name: string) => ownerMark(installation, "ComputeEndpoint", "team", name);

describe("the endpoint a Branch's create makes", () => {
  it("is the read-write endpoint of the ComputeEndpoint naming it, with what the create-branch body takes", () => {
    const wanted = ce("preview", {
      computeUnits: { min: 0.5, max: 2 },
      autosuspend: "10m",
      pgSettings: { work_mem: "4MB" },
      pooler: { enabled: true },
    });
    const made = childToCreate(branchKind, pass([wanted]));
    expect(made?.create.annotations).toEqual({ "neoncloud.dev/endpoint-owner": markOf("preview") });
    // The pooler is not in the body's options: the ComputeEndpoint's first PATCH sets it.
    expect(made?.create.body).toEqual({
      endpoints: [
        {
          type: "read_write",
          autoscalingLimitMinCu: 0.5,
          autoscalingLimitMaxCu: 2,
          suspendTimeoutSeconds: 600,
          pgSettings: { work_mem: "4MB" },
        },
      ],
    });
    expect(made?.status).toEqual({ endpoint: { name: "preview", uid: "uid-preview" } });
  });

  it.each([
    ["a read-only one", ce("replica", { type: "read_only" })],
    ["one that adopts an endpoint", ce("adopter", { endpointId: "ep-x" })],
    ["one that observes only", ce("watcher", { endpointId: "ep-x", managementPolicy: "ObserveOnly" })],
    ["one that has an endpoint already", ce("has", {}, { status: { endpointId: "ep-mine" } })],
    ["one of another project", ce("elsewhere", { projectId: "other" })],
    ["one with another key", ce("keyed", { credentials: { secretName: "team-key" } })],
    [
      "one being deleted",
      ce("going", {}, { metadata: { ...ce("going", {}).metadata, deletionTimestamp: "x" } }),
    ],
    ["one naming another Branch", ce("other", { branchRef: { name: "other" } })],
  ])("is none for %s: it makes its own, or none", (_, endpoint) => {
    expect(childToCreate(branchKind, pass([endpoint]))).toBeUndefined();
  });

  it("with the same key named on both, is made", () => {
    const key = { credentials: { secretName: "team-key" } };
    expect(childToCreate(branchKind, pass([ce("keyed", key)], key))?.status).toEqual({
      endpoint: { name: "keyed", uid: "uid-keyed" },
    });
  });

  it("of two, is the older one's: the one the branch's read-write claim goes to", () => {
    const [newer, older] = [ce("newer", {}), ce("older", {})];
    older.metadata.creationTimestamp = "2026-11-25T00:00:00Z";
    expect(childToCreate(branchKind, pass([newer, older]))?.status).toEqual({
      endpoint: { name: "older", uid: "uid-older" },
    });
  });
});

describe("what a Branch's status lost of the endpoint its create made", () => {
  const annotated = { annotations: { "neoncloud.dev/endpoint-owner": markOf("preview") } };

  it("is recorded again for the ComputeEndpoint the branch's annotation names", () => {
    expect(recoverChild(branchKind, pass([ce("preview", {}), ce("other", {})]), annotated)).toEqual({
      endpoint: { name: "preview", uid: "uid-preview" },
    });
  });

  it("is nothing when status has it, the branch has no such annotation, or that resource is gone", () => {
    const recorded = { endpoint: { name: "preview", uid: "uid-preview" } };
    expect(recoverChild(branchKind, pass([ce("preview", {})], {}, recorded), annotated)).toBeUndefined();
    expect(recoverChild(branchKind, pass([ce("preview", {})]), {})).toBeUndefined();
    expect(recoverChild(branchKind, pass([ce("other", {})]), annotated)).toBeUndefined();
  });
});

describe("the ComputeEndpoint an endpoint made with its branch is handed to", () => {
  const branch = (endpoint: unknown) => ({
    metadata: { name: "preview", namespace: "team" },
    status: { branchId: "br-1", endpoint },
  });
  const cache = (b: KubeObject) => (kind: ResourceKind) =>
    ({
      get: (_ns: string, name: string) => (kind.kind === "Branch" && name === "preview" ? b : undefined),
    }) as unknown as Store<KubeObject>;
  const mine = ce("db", {});
  const spec = ComputeEndpointSpec.parse(mine.spec);

  it("is the one the Branch's status names by name and UID", () => {
    expect(
      handedOver(endpointKind, spec, mine, cache(branch({ name: "db", uid: "uid-db" }) as KubeObject)),
    ).toBe(true);
  });

  it.each([
    ["another resource", { name: "other", uid: "uid-other" }],
    ["an earlier resource of the same name", { name: "db", uid: "uid-old" }],
    ["nobody", undefined],
  ])("is not this one when recorded for %s", (_, recorded) => {
    expect(handedOver(endpointKind, spec, mine, cache(branch(recorded) as KubeObject))).toBe(false);
  });
});
