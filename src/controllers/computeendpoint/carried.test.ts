// A ComputeEndpoint made with its Branch's create (the carried option, managed/carried.ts): which
// ComputeEndpoint's read-write endpoint a Branch's create makes, what the create carries, what the
// Branch's status records, how that record is recovered, and which resource it hands the endpoint to.
import { describe, expect, it } from "vitest";
import { BranchSpec, type BranchStatus } from "../../api/branch.ts";
import { ComputeEndpointSpec } from "../../api/computeendpoint.ts";
import type { KubeObject, Store } from "../../runtime/index.ts";
import {
  carriedIndex,
  handOverUnasked,
  parentOf,
  recoverCarried,
  toCarry,
  type ParentPass,
} from "../managed/carried.ts";
import { handedOver } from "../managed/references.ts";
import { ownerMark } from "../managed/installation.ts";
import type { KindControllerOptions } from "../options.ts";
import { computeEndpoint, computeEndpointCarried, computeEndpointResourceKind } from "./index.ts";

const installation = "0a1b2c3d";
const child = computeEndpointCarried(computeEndpoint({ resyncPeriodMs: 600_000 } as KindControllerOptions));
const children = [child];
const branchSpec = (spec: Record<string, unknown> = {}) => BranchSpec.parse({ projectId: "proj", ...spec });
/** What a Branch of project `proj` with the spec's credentials asks. */
const parent = (spec: BranchSpec) => ({ scope: spec.projectId, credentials: spec.credentials });

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
  const parents = parentOf(child);
  return {
    get: (namespace, name) => byKey.get(`${namespace}/${name}`),
    getByKey: (k) => byKey.get(k),
    list: () => [...byKey.values()],
    byIndex: (index, value) =>
      index === carriedIndex(computeEndpointResourceKind)
        ? objects.filter((o) => parents(o).includes(value)).map(key)
        : [],
  };
}

function pass(endpoints: Ce[], status: BranchStatus = {}, spec: BranchSpec = branchSpec()): ParentPass {
  return {
    spec,
    obj: {
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "Branch",
      metadata: { name: "preview", namespace: "team" },
    },
    status,
    deleting: false,
    mark: ownerMark(installation, "Branch", "team", "preview"),
    cache: () => store(endpoints) as Store<never>,
  };
}
const carry = (endpoints: Ce[], spec: Record<string, unknown> = {}) =>
  toCarry(pass(endpoints), children, parent(branchSpec(spec)));

const markOf = (name: string) => ownerMark(installation, "ComputeEndpoint", "team", name);

describe("the endpoint a Branch's create makes", () => {
  it("is the read-write endpoint of the ComputeEndpoint naming it, with what the create-branch body takes", () => {
    const wanted = ce("preview", {
      computeUnits: { min: 0.5, max: 2 },
      autosuspend: "10m",
      pgSettings: { work_mem: "4MB" },
      pooler: { enabled: true },
    });
    const made = carry([wanted]);
    expect(made?.carried.marks).toEqual({ "neoncloud.dev/endpoint-owner": markOf("preview") });
    // The pooler is not in the body's options: the ComputeEndpoint's first PATCH sets it.
    expect(made?.carried.body).toEqual({
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
    expect(carry([endpoint])).toBeUndefined();
  });

  it("with the same key named on both, is made", () => {
    const key = { credentials: { secretName: "team-key" } };
    expect(carry([ce("keyed", key)], key)?.status).toEqual({
      endpoint: { name: "keyed", uid: "uid-keyed" },
    });
  });

  it("of two, is the older one's: the one the branch's read-write claim goes to", () => {
    const [newer, older] = [ce("newer", {}), ce("older", {})];
    older.metadata.creationTimestamp = "2026-11-25T00:00:00Z";
    expect(carry([newer, older])?.status).toEqual({
      endpoint: { name: "older", uid: "uid-older" },
    });
  });
});

describe("what a Branch's status lost of the endpoint its create made", () => {
  const marks = { "neoncloud.dev/endpoint-owner": markOf("preview") };

  it("is recorded again for the ComputeEndpoint the branch's annotation names", () => {
    expect(recoverCarried(pass([ce("preview", {}), ce("other", {})]), children, marks)).toEqual({
      endpoint: { name: "preview", uid: "uid-preview" },
    });
  });

  it("is nothing when status has it, the branch has no such annotation, or that resource is gone", () => {
    const recorded = { endpoint: { name: "preview", uid: "uid-preview" } } as BranchStatus;
    expect(recoverCarried(pass([ce("preview", {})], recorded), children, marks)).toBeUndefined();
    expect(recoverCarried(pass([ce("preview", {})]), children, {})).toBeUndefined();
    expect(recoverCarried(pass([ce("other", {})]), children, marks)).toBeUndefined();
  });
});

describe("the read-write endpoint a masked branch's create made unasked", () => {
  const masked = branchSpec({
    masking: { rules: [{ database: "d", table: "t", column: "c", value: "'x'" }] },
  });
  const unasked = [{ ...child, unasked: (spec: unknown) => (spec as BranchSpec).masking !== undefined }];
  const handOver = (endpoints: Ce[], status: BranchStatus = {}, spec = masked) =>
    handOverUnasked(pass(endpoints, status, spec), unasked, parent(spec));

  it("is handed to the ComputeEndpoint a create would have carried, the oldest of them", () => {
    const [newer, older] = [ce("newer", {}), ce("older", {})];
    older.metadata.creationTimestamp = "2026-11-25T00:00:00Z";
    expect(handOver([newer, older])).toEqual({ endpoint: { name: "older", uid: "uid-older" } });
  });

  it("is handed again when the one recorded is gone, or was an earlier resource of its name", () => {
    const gone = { endpoint: { name: "first", uid: "uid-first" } } as BranchStatus;
    expect(handOver([ce("next", {})], gone)).toEqual({ endpoint: { name: "next", uid: "uid-next" } });
    const earlier = { endpoint: { name: "next", uid: "uid-before" } } as BranchStatus;
    expect(handOver([ce("next", {})], earlier)).toEqual({ endpoint: { name: "next", uid: "uid-next" } });
  });

  it("is nothing while the recorded one exists, for a branch that is not masked, or with no taker", () => {
    const recorded = { endpoint: { name: "db", uid: "uid-db" } } as BranchStatus;
    expect(handOver([ce("db", {}), ce("other", {})], recorded)).toBeUndefined();
    expect(handOver([ce("db", {})], {}, branchSpec())).toBeUndefined();
    expect(handOver([ce("replica", { type: "read_only" })])).toBeUndefined();
    expect(handOver([ce("has", {}, { status: { endpointId: "ep-mine" } })])).toBeUndefined();
  });
});

describe("the ComputeEndpoint an endpoint made with its branch is handed to", () => {
  const branch = (endpoint: unknown) => ({
    metadata: { name: "preview", namespace: "team" },
    status: { branchId: "br-1", endpoint },
  });
  const mine = ce("db", {});

  it("is the one the Branch's status names by name and UID", () => {
    expect(handedOver(branch({ name: "db", uid: "uid-db" }) as KubeObject, "endpoint", mine)).toBe(true);
  });

  it.each([
    ["another resource", { name: "other", uid: "uid-other" }],
    ["an earlier resource of the same name", { name: "db", uid: "uid-old" }],
    ["nobody", undefined],
  ])("is not this one when recorded for %s", (_, recorded) => {
    expect(handedOver(branch(recorded) as KubeObject, "endpoint", mine)).toBe(false);
  });
});
