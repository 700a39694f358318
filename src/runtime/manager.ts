// Ties the runtime together: controllers' caches start on every replica (so a
// standby is warm), workers run only on the leader, the HTTP endpoints serve
// metrics and probes, and SIGTERM stops taking work, lets running reconciles
// finish within a deadline, releases the lease and returns.
import { hostname } from "node:os";
import { Controller, type ControllerOptions } from "./controller.ts";
import type { RuntimeConfig } from "./config.ts";
import { EventRecorder } from "./events.ts";
import type { KubeClient, KubeObject } from "./kube.ts";
import { LeaderElector } from "./leader.ts";
import { silentLogger, type Logger } from "./log.ts";
import { createMetrics, type Metrics } from "./metrics.ts";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { MetricsAuthorizer } from "./metrics-auth.ts";
import { selfSignedCertificate } from "./self-signed.ts";
import { startSecureMetricsServer, startServer, type RunningServer } from "./server.ts";
import type { Shard } from "./shard.ts";
import { SharedInformers } from "./shared-informers.ts";

export interface ManagerOptions {
  client: KubeClient;
  /** Without a leader election, this replica acts as soon as its caches sync. */
  leaderElection?: {
    namespace: string;
    name: string;
    leaseDurationMs?: number;
    renewDeadlineMs?: number;
    retryPeriodMs?: number;
  };
  /** This replica's identity (default: $POD_NAME or host name, plus a random suffix). */
  identity?: string;
  /** Listen address of /metrics, /healthz, /readyz; omit to serve nothing. */
  metricsAddress?: string;
  /**
   * Serve /metrics over HTTPS at `address` instead, each scrape authenticated and authorized by
   * the API server; `certDir` holds tls.crt and tls.key, else a self-signed certificate is made.
   */
  secureMetrics?: { address: string; certDir?: string };
  /** How long running reconciles may take to finish on shutdown (default 30 s). */
  shutdownDeadlineMs?: number;
  /** The objects every controller of this replica reconciles, when replicas are shards (shard.ts). */
  shard?: Shard | undefined;
  /** reportingController of Events. */
  eventController?: string;
  metrics?: Metrics;
  log?: Logger;
  /** Told when this replica starts or stops acting (leadership gained or lost). */
  onActingChange?(acting: boolean): void;
  /**
   * Leadership was lost while running (not given up on shutdown): running reconciles have been
   * aborted. A process should exit, as controller-runtime's managers do: a fresh process starts
   * from clean state, and a renewal that hung past its deadline cannot quietly resume acting.
   */
  onLeadershipLost?(): void;
}

/** Manager options from the validated configuration. */
export function managerOptionsFromConfig(
  config: RuntimeConfig,
  client: KubeClient,
  log?: Logger,
): ManagerOptions {
  return {
    client,
    log,
    metricsAddress: config.metricsAddress,
    secureMetrics: config.metricsSecure
      ? { address: config.metricsSecureAddress, certDir: config.metricsCertDir }
      : undefined,
    shutdownDeadlineMs: config.shutdownDeadlineMs,
    shard: config.watchLabelSelector
      ? { selector: config.watchLabelSelector, handoverMs: config.shardHandoverMs }
      : undefined,
    leaderElection: config.leaderElection
      ? { namespace: config.leaderElectionNamespace, name: config.leaderElectionId }
      : undefined,
  };
}

export class Manager {
  readonly metrics: Metrics;
  readonly events: EventRecorder;
  readonly identity: string;
  private readonly options: ManagerOptions;
  private readonly log: Logger;
  private readonly controllers: Controller<KubeObject>[] = [];
  /** One informer per kind and shape for all the controllers (shared-informers.ts). */
  private readonly informers: SharedInformers;
  private elector: LeaderElector | undefined;
  private server: RunningServer | undefined;
  private metricsServer: RunningServer | undefined;
  private acting = false;
  private started = false;
  private serving: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  /** Serialises starting and stopping workers when leadership flaps. */
  private transition: Promise<void> = Promise.resolve();
  private term: AbortController | undefined;

  constructor(options: ManagerOptions) {
    this.options = options;
    this.log = options.log ?? silentLogger;
    this.metrics = options.metrics ?? createMetrics();
    this.identity =
      options.identity ?? `${process.env.POD_NAME ?? hostname()}_${Math.random().toString(36).slice(2, 10)}`;
    this.informers = new SharedInformers(options.client, this.log);
    this.events = new EventRecorder(options.client, {
      controller: options.eventController ?? "neoncloud.dev/neon-cloud-operator",
      instance: this.identity,
      log: this.log,
    });
  }

  /** Creates a controller wired to this manager's client, metrics, events and logger. */
  controller<T extends KubeObject>(options: ControllerOptions<T>): Controller<T> {
    if (this.started) throw new Error("add controllers before starting the manager");
    const shard = options.shard ?? this.options.shard;
    const controller = new Controller<T>(shard ? { ...options, shard } : options, {
      client: this.options.client,
      metrics: this.metrics,
      events: this.events,
      log: this.log,
      informers: this.informers,
    });
    // The manager only starts, stops and asks controllers; it never hands them objects.
    this.controllers.push(controller as unknown as Controller<KubeObject>);
    return controller;
  }

  /** True once started and every cache has been listed: reads from the caches reflect the cluster. */
  get ready(): boolean {
    return this.started && this.controllers.every((c) => c.synced);
  }

  /** True while this replica holds leadership (or runs without leader election) and reconciles. */
  get isActing(): boolean {
    return this.acting;
  }

  get serverUrl(): string | undefined {
    return this.server?.url;
  }

  /** Where /metrics is served: the HTTPS server with secure metrics, else the plain one. */
  get metricsUrl(): string | undefined {
    return this.metricsServer
      ? `${this.metricsServer.url}/metrics`
      : this.server && `${this.server.url}/metrics`;
  }

  /**
   * Serves /healthz, /readyz (and plain /metrics) before the manager starts: a process still
   * waiting for the API server at start-up is alive, not ready, and its liveness probe must not
   * restart it for waiting. `start` serves them too, once.
   */
  async serveProbes(): Promise<void> {
    if (this.options.metricsAddress === undefined) return;
    this.serving ??= (async () => {
      this.server = await startServer({
        address: this.options.metricsAddress ?? "",
        registry: this.metrics.registry,
        ready: () => this.ready,
        metrics: !this.options.secureMetrics,
      });
      this.log.info(
        { url: this.server.url },
        this.options.secureMetrics ? "serving /healthz, /readyz" : "serving /metrics, /healthz, /readyz",
      );
    })();
    await this.serving;
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await this.serveProbes();
    if (this.options.secureMetrics) await this.startSecureMetrics(this.options.secureMetrics);
    for (const c of this.controllers) c.startCaches();
    const election = this.options.leaderElection;
    this.leaderStatus(0);
    if (!election) {
      this.beginActing();
      return;
    }
    this.elector = new LeaderElector(this.options.client, {
      ...election,
      identity: this.identity,
      log: this.log,
    });
    this.elector.start({
      onStartedLeading: () => this.beginActing(),
      onStoppedLeading: () => {
        const ended = this.endActing(0);
        if (!this.stopping) void ended.then(() => this.options.onLeadershipLost?.());
      },
      onNewLeader: (leader) => this.log.info({ leader }, "leader observed"),
    });
  }

  private beginActing(): void {
    const term = new AbortController();
    this.term = term;
    this.acting = true;
    this.leaderStatus(1);
    this.options.onActingChange?.(true);
    this.transition = this.transition.then(async () => {
      // A new leader reconciles only from complete caches (unless it stops acting first).
      const stopped = new Promise<void>((resolve) => term.signal.addEventListener("abort", () => resolve()));
      await Promise.race([Promise.all(this.controllers.map((c) => c.waitForSync())), stopped]);
      if (term.signal.aborted) return;
      for (const c of this.controllers) c.startWorkers();
    });
  }

  /** leader_election_master_status of the lease, as client-go reports it (only with an election). */
  private leaderStatus(value: 0 | 1): void {
    const lease = this.options.leaderElection?.name;
    if (lease) this.metrics.leaderElectionStatus.set({ name: lease }, value);
  }

  /** Stops reconciling; with deadline 0 running reconciles are aborted at once (leadership lost). */
  private endActing(deadlineMs: number): Promise<void> {
    this.term?.abort();
    if (this.acting) this.options.onActingChange?.(false);
    this.acting = false;
    this.leaderStatus(0);
    this.transition = this.transition.then(async () => {
      await Promise.all(this.controllers.map((c) => c.stopWorkers(deadlineMs)));
    });
    return this.transition;
  }

  private async startSecureMetrics({
    address,
    certDir,
  }: {
    address: string;
    certDir?: string;
  }): Promise<void> {
    const generated = certDir ? undefined : selfSignedCertificate([hostname(), "localhost"]);
    this.metricsServer = await startSecureMetricsServer({
      address,
      registry: this.metrics.registry,
      tls: () =>
        generated ?? {
          cert: readFileSync(join(certDir ?? "", "tls.crt"), "utf8"),
          key: readFileSync(join(certDir ?? "", "tls.key"), "utf8"),
        },
      authorizer: new MetricsAuthorizer({ client: this.options.client, log: this.log }),
    });
    this.log.info(
      { url: this.metricsServer.url, certificate: certDir ?? "self-signed" },
      "serving /metrics over HTTPS to scrapers allowed to get /metrics",
    );
  }

  /** Stops taking work, lets reconciles finish within the deadline, releases the lease, stops caches and the server. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const deadline = this.options.shutdownDeadlineMs ?? 30_000;
      this.log.info({ deadlineMs: deadline }, "shutting down");
      await this.endActing(deadline);
      await this.elector?.stop();
      await Promise.all(this.controllers.map((c) => c.stop()));
      await this.informers.stop();
      await this.events.flush();
      await this.serving?.catch(() => undefined);
      await this.server?.close();
      await this.metricsServer?.close();
      this.log.info("shut down");
    })();
    return this.stopping;
  }

  /** Starts, then waits for SIGTERM or SIGINT and shuts down cleanly; the caller exits 0. */
  async run(): Promise<void> {
    const signalled = terminationSignal();
    await this.start();
    const signal = await signalled;
    this.log.info({ signal }, "received signal");
    await this.stop();
  }
}

/** Resolves with the name of the first SIGTERM or SIGINT the process receives. */
export function terminationSignal(): Promise<string> {
  return new Promise<string>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  });
}
