// The work a campaign does to the operator: ComputeEndpoints created, resized,
// moved to another branch and deleted; ApiKeys created, rotated (6 s interval,
// 3 s grace) and deleted (revoked). Each call makes one change through the API
// server and returns at once, so the operator always has work in progress when
// a fault or a kill strikes.
import { endpointMark } from "./invariants.ts";
import type { ApiKeyObject } from "../../src/controllers/apikey/index.ts";
import { apiKeyResourceKind } from "../../src/controllers/apikey/index.ts";
import { computeEndpointResourceKind } from "../../src/controllers/computeendpoint/index.ts";
import {
  ContentType,
  isConflict,
  type KubeClient,
  type KubeObject,
  type ResourceKind,
} from "../../src/runtime/index.ts";
import type { ComputeEndpointSpec } from "../../src/api/computeendpoint.ts";
import type { Random } from "./random.ts";

export const flowKinds = [
  "create",
  "update",
  "move",
  "delete",
  "key-create",
  "rotation",
  "revocation",
] as const;
export type FlowKind = (typeof flowKinds)[number];

/** How often each flow is drawn: endpoints come more often than they go, so campaigns end with work in place. */
const flowWeights: Record<FlowKind, number> = {
  create: 3,
  update: 2,
  move: 2,
  delete: 1.5,
  "key-create": 1,
  rotation: 1,
  revocation: 1,
};

export function pickFlow(random: Random): FlowKind {
  const total = flowKinds.reduce((sum, k) => sum + flowWeights[k], 0);
  let roll = random.next() * total;
  for (const kind of flowKinds) {
    roll -= flowWeights[kind];
    if (roll < 0) return kind;
  }
  return "create";
}

export const rotation = { interval: "6s", gracePeriod: "3s" };

const sizes: { min: number; max: number }[] = [
  { min: 0.25, max: 0.25 },
  { min: 0.25, max: 1 },
  { min: 0.5, max: 2 },
  { min: 1, max: 1 },
  { min: 1, max: 4 },
  { min: 2, max: 2 },
];

export interface EndpointObject extends KubeObject {
  spec: ComputeEndpointSpec;
  status?: {
    endpointId?: string;
    branchId?: string;
    computeUnits?: { min: number; max: number };
    observedGeneration?: number;
    conditions?: { type: string; status: string; reason?: string }[];
  };
}

/** Branches without an endpoint, shared by every campaign: a create or a move takes one for good. */
export class BranchPool {
  private readonly free: Map<string, string[]>;

  constructor(free: Map<string, string[]>) {
    this.free = free;
  }

  take(random: Random, project?: string): { project: string; branch: string } {
    const candidates = [...this.free.entries()].filter(
      ([p, list]) => list.length > 0 && (project === undefined || p === project),
    );
    if (candidates.length === 0) throw new Error("out of free branches; seed more (see --branches)");
    const [p, list] = random.pick(candidates);
    const branch = list.splice(random.int(0, list.length - 1), 1)[0]!;
    return { project: p, branch };
  }
}

/** Retries a Kubernetes call through API server restarts and cut connections (not through 4xx). */
export async function persist<T>(what: string, call: () => Promise<T>, deadlineMs = 120_000): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    try {
      return await call();
    } catch (err) {
      const status = (err as { statusCode?: number }).statusCode;
      const transient = status === undefined || status >= 500 || status === 429;
      if (!transient || Date.now() > deadline) {
        throw new Error(`${what}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** Creates an object; when a retry finds it already there (the first attempt's answer was lost), reads it. */
async function createOnce<T extends KubeObject>(kube: KubeClient, kind: ResourceKind, obj: T): Promise<T> {
  return persist(`create ${obj.metadata.name}`, async () => {
    try {
      return await kube.create<T>(kind, obj);
    } catch (err) {
      if (!isConflict(err)) throw err;
      const existing = await kube.get<T>(kind, obj.metadata.namespace, obj.metadata.name ?? "");
      if (!existing) throw err;
      return existing;
    }
  });
}

export class Workload {
  /** Live endpoints by name: what the driver last asked for. */
  readonly endpoints = new Map<string, { uid: string; spec: ComputeEndpointSpec }>();
  /** Live ApiKeys by name, and whether they rotate. */
  readonly keys = new Map<string, { uid: string; rotates: boolean }>();
  /** Resources deleted by the driver (they must disappear). */
  readonly deleted: { kind: "ComputeEndpoint" | "ApiKey"; name: string }[] = [];
  /** Owner marks (names) of endpoints deleted with deletionPolicy Orphan: they stay on purpose. */
  readonly orphaned = new Set<string>();
  readonly flows = new Map<FlowKind, number>();
  private serial = 0;
  private readonly kube: KubeClient;
  private readonly random: Random;
  readonly namespace: string;
  private readonly branches: BranchPool;
  private readonly limits: { endpoints: number; keys: number };
  /** Labels each new resource gets (a shard's, drawn per resource). */
  labels: () => Record<string, string> | undefined = () => undefined;

  constructor(
    kube: KubeClient,
    random: Random,
    namespace: string,
    branches: BranchPool,
    limits = { endpoints: 8, keys: 4 },
  ) {
    this.kube = kube;
    this.random = random;
    this.namespace = namespace;
    this.branches = branches;
    this.limits = limits;
  }

  get flowCount(): number {
    let n = 0;
    for (const v of this.flows.values()) n += v;
    return n;
  }

  /**
   * One change of the given kind (or a possible substitute when it cannot be
   * done now, e.g. a delete with nothing to delete). Returns the kind done and,
   * for a rotation, when the key is due to rotate next.
   */
  async step(wanted: FlowKind): Promise<{ kind: FlowKind; rotationDueAt?: number }> {
    const kind = this.feasible(wanted);
    this.flows.set(kind, (this.flows.get(kind) ?? 0) + 1);
    switch (kind) {
      case "create":
        await this.createEndpoint();
        return { kind };
      case "update":
        await this.resize();
        return { kind };
      case "move":
        await this.move();
        return { kind };
      case "delete":
        await this.deleteEndpoint();
        return { kind };
      case "key-create":
        await this.createKey(this.random.chance(0.5));
        return { kind };
      case "rotation":
        return { kind, rotationDueAt: await this.rotation() };
      case "revocation":
        await this.deleteKey();
        return { kind };
    }
  }

  private feasible(kind: FlowKind): FlowKind {
    const endpoints = this.endpoints.size;
    const keys = this.keys.size;
    if ((kind === "update" || kind === "move" || kind === "delete") && endpoints === 0) return "create";
    if (kind === "create" && endpoints >= this.limits.endpoints) return "delete";
    if (kind === "revocation" && keys === 0) return "key-create";
    if (kind === "key-create" && keys >= this.limits.keys) return "revocation";
    return kind;
  }

  private pickName(map: Map<string, unknown>): string {
    return this.random.pick([...map.keys()]);
  }

  async createEndpoint(): Promise<void> {
    const { project, branch } = this.branches.take(this.random);
    const name = `cep-${++this.serial}`;
    const spec: ComputeEndpointSpec = {
      projectId: project,
      branchId: branch,
      type: "read_write",
      computeUnits: this.random.pick(sizes),
      deletionPolicy: this.random.chance(0.15) ? "Orphan" : "Delete",
      managementPolicy: "Manage",
    };
    const created = await createOnce<EndpointObject>(this.kube, computeEndpointResourceKind, {
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "ComputeEndpoint",
      metadata: { name, namespace: this.namespace, labels: this.labels() },
      spec,
    });
    this.endpoints.set(name, { uid: created.metadata.uid ?? "", spec });
  }

  private async patchEndpoint(name: string, change: Partial<ComputeEndpointSpec>): Promise<void> {
    const entry = this.endpoints.get(name)!;
    entry.spec = { ...entry.spec, ...change };
    await persist(`patch ${name}`, () =>
      this.kube.patch(
        computeEndpointResourceKind,
        this.namespace,
        name,
        { spec: change },
        ContentType.MergePatch,
      ),
    );
  }

  private async resize(): Promise<void> {
    const name = this.pickName(this.endpoints);
    const current = this.endpoints.get(name)!.spec.computeUnits;
    const next = this.random.pick(sizes.filter((s) => s.min !== current?.min || s.max !== current.max));
    await this.patchEndpoint(name, { computeUnits: next });
  }

  private async move(): Promise<void> {
    const name = this.pickName(this.endpoints);
    const { branch } = this.branches.take(this.random, this.endpoints.get(name)!.spec.projectId);
    await this.patchEndpoint(name, { branchId: branch });
  }

  private async deleteEndpoint(): Promise<void> {
    const name = this.pickName(this.endpoints);
    const entry = this.endpoints.get(name)!;
    this.endpoints.delete(name);
    if (entry.spec.deletionPolicy === "Orphan") this.orphaned.add(endpointMark(this.namespace, name));
    this.deleted.push({ kind: "ComputeEndpoint", name });
    await persist(`delete ${name}`, () =>
      this.kube.delete(computeEndpointResourceKind, this.namespace, name),
    );
  }

  async createKey(rotates: boolean): Promise<string> {
    const name = `key-${++this.serial}`;
    const created = await createOnce<ApiKeyObject>(this.kube, apiKeyResourceKind, {
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "ApiKey",
      metadata: { name, namespace: this.namespace, labels: this.labels() },
      spec: {
        keyName: `${this.namespace}-${name}`,
        deletionPolicy: "Revoke",
        ...(rotates ? { rotation } : {}),
      },
    });
    this.keys.set(name, { uid: created.metadata.uid ?? "", rotates });
    return name;
  }

  /** Turns rotation on for a key that has none, or aims at a rotating key's next rotation. */
  private async rotation(): Promise<number | undefined> {
    const still = [...this.keys.entries()].filter(([, k]) => !k.rotates).map(([n]) => n);
    const rotating = [...this.keys.entries()].filter(([, k]) => k.rotates).map(([n]) => n);
    if (rotating.length === 0 || (still.length > 0 && this.random.chance(0.3))) {
      if (still.length === 0) {
        await this.createKey(true);
        return undefined;
      }
      const name = this.random.pick(still);
      this.keys.get(name)!.rotates = true;
      await persist(`patch ${name}`, () =>
        this.kube.patch(
          apiKeyResourceKind,
          this.namespace,
          name,
          { spec: { rotation } },
          ContentType.MergePatch,
        ),
      );
      return undefined;
    }
    const name = this.random.pick(rotating);
    const obj = await persist(`get ${name}`, () =>
      this.kube.get<ApiKeyObject>(apiKeyResourceKind, this.namespace, name),
    );
    const due = obj?.status?.nextRotationAt;
    return due === undefined ? undefined : Date.parse(due);
  }

  /** Sets a label on a live resource of either kind, drawn at random (a move between shards). */
  async relabel(key: string, value: string): Promise<string | undefined> {
    const kinds = [
      ...[...this.endpoints.keys()].map((name) => [computeEndpointResourceKind, name] as const),
      ...[...this.keys.keys()].map((name) => [apiKeyResourceKind, name] as const),
    ];
    if (kinds.length === 0) return undefined;
    const [kind, name] = this.random.pick(kinds);
    await persist(`label ${name}`, () =>
      this.kube.patch(
        kind,
        this.namespace,
        name,
        { metadata: { labels: { [key]: value } } },
        ContentType.MergePatch,
      ),
    );
    return name;
  }

  /** Deletes every live resource (the end of a run: afterwards nothing may remain on the platform). */
  async deleteAll(): Promise<void> {
    while (this.endpoints.size > 0) await this.deleteEndpoint();
    while (this.keys.size > 0) await this.deleteKey();
  }

  private async deleteKey(): Promise<void> {
    const name = this.pickName(this.keys);
    this.keys.delete(name);
    this.deleted.push({ kind: "ApiKey", name });
    await persist(`delete ${name}`, () => this.kube.delete(apiKeyResourceKind, this.namespace, name));
  }
}
