// What the bench sees of ComputeEndpoints (or another kind's resources) through a watch: when each appeared,
// when it first became Ready, how many times its status changed (each change is
// one status write by the operator; the status writer skips no-op writes), and
// when each new generation was first seen.
import { Informer, KubeClient, type KubeObject, type ResourceKind } from "../../src/runtime/index.ts";
import type { KubeConfig } from "@kubernetes/client-node";
import type { OperatorProcess } from "./operator-process.ts";

export const cepKind: ResourceKind = {
  group: "neoncloud.dev",
  version: "v1alpha1",
  plural: "computeendpoints",
  kind: "ComputeEndpoint",
};

interface Condition {
  type: string;
  status: string;
  reason?: string;
}

export interface CepObject extends KubeObject {
  spec: Record<string, unknown>;
  status?: {
    conditions?: Condition[];
    endpointId?: string;
    observedGeneration?: number;
    operations?: { id: string }[];
  };
}

export interface Tracked {
  addedAt: number;
  readyAt?: number;
  statusWrites: number;
  /** Generation -> when the bench first saw it. */
  generationSeenAt: Map<number, number>;
  lastStatus: string;
  /** Each Ready condition reason the resource showed, with when the bench first saw it (for --trace). */
  reasons: { at: number; reason: string }[];
  /** Generation -> when the bench first saw the resource Ready at it. */
  readyAtGeneration: Map<number, number>;
  /** When the bench first saw a deletion timestamp on it, and when it saw it gone. */
  deletingAt?: number;
  goneAt?: number;
  /** The operations its status last named (ids of the platform's operations of its last change). */
  operationIds: string[];
}

function isReady(obj: CepObject): boolean {
  const ready = obj.status?.conditions?.find((c) => c.type === "Ready");
  return ready?.status === "True" && obj.status?.observedGeneration === obj.metadata.generation;
}

export class CepWatch {
  readonly tracked = new Map<string, Tracked>();
  readonly informer: Informer<CepObject>;
  private readyCount = 0;
  private waiters: { count: number; done: () => void }[] = [];

  /** `kind`: ComputeEndpoints unless another of the operator's kinds (their status has the same shape). */
  constructor(kubeConfig: KubeConfig, namespace: string, kind: ResourceKind = cepKind) {
    this.informer = new Informer<CepObject>(new KubeClient(kubeConfig), kind, {
      namespaces: [namespace],
      pageSize: 500,
    });
    this.informer.on({
      add: (obj) => this.see(obj),
      update: (_old, obj) => this.see(obj),
      delete: (obj) => {
        const t = this.tracked.get(obj.metadata.name ?? "");
        if (t && t.goneAt === undefined) t.goneAt = Date.now();
      },
    });
  }

  async start(): Promise<void> {
    this.informer.start();
    await this.informer.waitForSync();
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  get ready(): number {
    return this.readyCount;
  }

  /** Resolves once at least `count` objects have been Ready (at their generation of the time). */
  whenReady(count: number): Promise<void> {
    if (this.readyCount >= count) return Promise.resolve();
    return new Promise((done) => this.waiters.push({ count, done }));
  }

  private see(obj: CepObject): void {
    const now = Date.now();
    const key = obj.metadata.name ?? "";
    const status = JSON.stringify(obj.status ?? null);
    let t = this.tracked.get(key);
    if (!t) {
      t = {
        addedAt: now,
        // The status an object is first seen with is the API server's: the CRD defaults it to
        // {observedGeneration: 0} on creation (so kstatus reads a new object as InProgress). No
        // one wrote it, so only changes after it count.
        statusWrites: 0,
        generationSeenAt: new Map(),
        lastStatus: status,
        reasons: [],
        readyAtGeneration: new Map(),
        operationIds: [],
      };
      this.tracked.set(key, t);
    } else if (status !== t.lastStatus) {
      t.statusWrites++;
      t.lastStatus = status;
    }
    const reason = obj.status?.conditions?.find((c) => c.type === "Ready")?.reason;
    if (reason !== undefined && t.reasons.at(-1)?.reason !== reason) t.reasons.push({ at: now, reason });
    const generation = obj.metadata.generation ?? 0;
    if (!t.generationSeenAt.has(generation)) t.generationSeenAt.set(generation, now);
    if (obj.metadata.deletionTimestamp && t.deletingAt === undefined) t.deletingAt = now;
    const operations = obj.status?.operations?.map((op) => op.id) ?? [];
    if (operations.length > 0) t.operationIds = operations;
    if (isReady(obj) && !t.readyAtGeneration.has(generation)) t.readyAtGeneration.set(generation, now);
    if (t.readyAt === undefined && isReady(obj)) {
      t.readyAt = now;
      this.readyCount++;
      this.waiters = this.waiters.filter((w) => {
        if (this.readyCount < w.count) return true;
        w.done();
        return false;
      });
    }
  }
}

/**
 * Waits until `count` resources are Ready or `timeoutMs` passes, saying how far it got every
 * 15 s; the operator process ending first is an error. Returns whether time ran out.
 */
export async function untilReady(
  watch: CepWatch,
  count: number,
  operator: OperatorProcess,
  timeoutMs: number,
  say: (ready: number, seconds: number) => void,
): Promise<{ timedOut: boolean }> {
  const started = Date.now();
  let peak = 0;
  const progress = setInterval(() => {
    peak = Math.max(peak, operator.sample()?.peakRssBytes ?? 0);
    say(watch.ready, Math.round((Date.now() - started) / 1000));
  }, 15_000);
  const outcome = await Promise.race([
    watch.whenReady(count).then(() => "ready"),
    new Promise<string>((done) => setTimeout(() => done("timeout"), timeoutMs).unref()),
    operator.exited.then((how) => `the operator process ended (${how})`),
  ]);
  clearInterval(progress);
  if (outcome !== "ready" && outcome !== "timeout") {
    throw new Error(`${outcome} with ${watch.ready} Ready; peak RSS ${Math.round(peak / 1048576)} MB`);
  }
  return { timedOut: outcome === "timeout" };
}
