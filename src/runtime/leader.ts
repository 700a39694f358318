// Leader election on a coordination.k8s.io Lease, after client-go's
// leaderelection: acquire when the lease is free or expired, renew every retry
// period, and give up leadership as soon as renewals have failed for the renew
// deadline — shorter than the lease, so we stop before anyone else may start.
// Expiry is judged by our own clock from when we last saw the record change,
// never by comparing timestamps written by another machine.
import { isConflict, type KubeClient, type KubeObject, type ResourceKind } from "./kube.ts";
import { silentLogger, type Logger } from "./log.ts";
import { pause } from "./pause.ts";

export const leaseKind: ResourceKind = {
  group: "coordination.k8s.io",
  version: "v1",
  plural: "leases",
  kind: "Lease",
};

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

interface Lease extends KubeObject {
  spec?: LeaseSpec;
}

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  /** This replica's identity, unique among replicas (e.g. pod name). */
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  log?: Logger;
}

export interface LeaderCallbacks {
  onStartedLeading(): void;
  /** Called the moment leadership is lost or given up: stop acting now. */
  onStoppedLeading(): void;
  onNewLeader?(identity: string): void;
}

function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/Z$/, "000Z");
}

export class LeaderElector {
  private readonly client: KubeClient;
  private readonly options: Required<Omit<LeaderElectionOptions, "log">>;
  private readonly log: Logger;
  private leading = false;
  private observed: string | undefined;
  private observedAt = 0;
  private lastRenew = 0;
  private loop: Promise<void> | undefined;
  private readonly stopController = new AbortController();
  private callbacks: LeaderCallbacks | undefined;
  private lastLeader: string | undefined;
  /** Fires when renewals have failed for the renew deadline, even while a request hangs. */
  private deadline: NodeJS.Timeout | undefined;

  constructor(client: KubeClient, options: LeaderElectionOptions) {
    this.client = client;
    this.options = {
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      ...options,
    };
    if (this.options.renewDeadlineMs >= this.options.leaseDurationMs) {
      throw new Error("the renew deadline must be shorter than the lease duration");
    }
    this.log = (options.log ?? silentLogger).child({ lease: `${options.namespace}/${options.name}` });
  }

  get isLeader(): boolean {
    return this.leading;
  }

  get identity(): string {
    return this.options.identity;
  }

  start(callbacks: LeaderCallbacks): void {
    if (this.loop) return;
    this.callbacks = callbacks;
    this.loop = this.run();
  }

  /** Stops campaigning; a leader releases the lease so a standby takes over at once. */
  async stop(): Promise<void> {
    this.stopController.abort();
    await this.loop;
    clearTimeout(this.deadline);
    if (this.leading) {
      this.setLeading(false);
      await this.release();
    }
  }

  private setLeading(leading: boolean): void {
    if (this.leading === leading) return;
    this.leading = leading;
    if (leading) {
      this.log.info({ identity: this.options.identity }, "became leader");
      this.callbacks?.onStartedLeading();
    } else {
      this.log.warn({ identity: this.options.identity }, "stopped leading");
      this.callbacks?.onStoppedLeading();
    }
  }

  private async run(): Promise<void> {
    const signal = this.stopController.signal;
    while (!signal.aborted) {
      let ok = false;
      const attemptAt = Date.now();
      try {
        ok = await this.tryAcquireOrRenew();
      } catch (err) {
        this.log.warn({ err }, "lease update failed");
      }
      if (signal.aborted) break;
      const now = Date.now();
      if (ok) {
        // Count from when the renewal was sent: the server may have applied it late.
        this.lastRenew = attemptAt;
        clearTimeout(this.deadline);
        this.deadline = setTimeout(
          () => this.setLeading(false),
          attemptAt + this.options.renewDeadlineMs - now,
        );
        this.setLeading(true);
      } else if (
        this.leading &&
        (now - this.lastRenew >= this.options.renewDeadlineMs || this.heldByOther())
      ) {
        clearTimeout(this.deadline);
        this.setLeading(false);
      }
      // Candidates spread their attempts; a leader renews on the beat.
      const wait = this.leading
        ? this.options.retryPeriodMs
        : this.options.retryPeriodMs * (1 + 0.2 * Math.random());
      await pause(wait, signal);
    }
  }

  private heldByOther(): boolean {
    return (
      this.lastLeader !== undefined && this.lastLeader !== "" && this.lastLeader !== this.options.identity
    );
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity, leaseDurationMs } = this.options;
    const now = Date.now();
    const durationSeconds = Math.max(1, Math.ceil(leaseDurationMs / 1000));
    const lease = await this.client.get<Lease>(leaseKind, namespace, name);
    if (!lease) {
      try {
        await this.client.create<Lease>(leaseKind, {
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: { name, namespace },
          spec: {
            holderIdentity: identity,
            leaseDurationSeconds: durationSeconds,
            acquireTime: microTime(now),
            renewTime: microTime(now),
            leaseTransitions: 0,
          },
        });
        this.noteLeader(identity);
        return true;
      } catch (err) {
        if (isConflict(err)) return false;
        throw err;
      }
    }
    const spec = lease.spec ?? {};
    const record = JSON.stringify([spec.holderIdentity, spec.renewTime, spec.leaseDurationSeconds]);
    if (record !== this.observed) {
      this.observed = record;
      this.observedAt = now;
    }
    const holder = spec.holderIdentity ?? "";
    this.noteLeader(holder);
    const expiresAt = this.observedAt + (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (holder !== "" && holder !== identity && now < expiresAt) return false;
    const renewing = holder === identity;
    try {
      await this.client.replace<Lease>(leaseKind, {
        ...lease,
        spec: {
          holderIdentity: identity,
          leaseDurationSeconds: durationSeconds,
          acquireTime: renewing ? spec.acquireTime : microTime(now),
          renewTime: microTime(now),
          leaseTransitions: (spec.leaseTransitions ?? 0) + (renewing ? 0 : 1),
        },
      });
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
    this.noteLeader(identity);
    return true;
  }

  private noteLeader(identity: string): void {
    if (identity === this.lastLeader) return;
    this.lastLeader = identity;
    if (identity) this.callbacks?.onNewLeader?.(identity);
  }

  /** Empties the holder so a standby acquires on its next attempt instead of waiting for expiry. */
  private async release(): Promise<void> {
    const { namespace, name, identity } = this.options;
    try {
      const lease = await this.client.get<Lease>(leaseKind, namespace, name);
      if (lease?.spec?.holderIdentity !== identity) return;
      const now = microTime(Date.now());
      await this.client.replace<Lease>(leaseKind, {
        ...lease,
        spec: {
          ...lease.spec,
          holderIdentity: undefined,
          leaseDurationSeconds: 1,
          acquireTime: now,
          renewTime: now,
        },
      });
      this.log.info("released the lease");
    } catch (err) {
      this.log.warn({ err }, "could not release the lease");
    }
  }
}
