// The operator process: one Manager (leader election, metrics and probes,
// graceful shutdown) running the controllers of every kind. Only wiring here.
import { readFileSync } from "node:fs";
import { KubeConfig } from "@kubernetes/client-node";
import type { OperatorConfig } from "./config.ts";
import { credentialsGrantResource, namespaceResource } from "./controllers/access/grants.ts";
import { PlatformAccess } from "./controllers/access/platform-access.ts";
import { parseDefaultCredentials } from "./controllers/managed/credentials.ts";
import { installationId } from "./controllers/managed/installation.ts";
import type { KindControllerOptions } from "./controllers/options.ts";
import { kindControllers } from "./controllers/registry.ts";
import { registerOperatorMetrics } from "./metrics.ts";
import { accountShare } from "./platform/index.ts";
import {
  KubeApiError,
  KubeClient,
  Manager,
  managerOptionsFromConfig,
  runtimeSettings,
  isApiServerUnavailable,
  isNotFound,
  whenApiServerAnswers,
  type Controller,
  type KubeObject,
  type Logger,
} from "./runtime/index.ts";

export interface RunningOperator {
  manager: Manager;
  /** Resolves if this replica loses its leadership while running; the process should then exit. */
  leadershipLost: Promise<void>;
  stop(): Promise<void>;
}

export interface OperatorOverrides {
  /** Kubernetes access; default: $KUBECONFIG, ~/.kube/config, or the pod's ServiceAccount. */
  kubeConfig?: KubeConfig;
  /** Interval between looks at running platform operations; wins over `--poll-interval`. */
  pollIntervalMs?: number;
  /** Stops a start that is still waiting for the API server (a SIGTERM during start-up). */
  signal?: AbortSignal;
}

export async function startOperator(
  config: OperatorConfig,
  log: Logger,
  overrides: OperatorOverrides = {},
): Promise<RunningOperator> {
  const kubeConfig = overrides.kubeConfig ?? defaultKubeConfig();
  const version = operatorVersion();
  // Named in managedFields and in the API server's audit log as what it is.
  const client = new KubeClient(kubeConfig, {
    fieldManager: "neon-cloud-operator",
    userAgent: `neon-cloud-operator/${version} (node ${process.version})`,
  });
  let lost: () => void = () => undefined;
  const leadershipLost = new Promise<void>((resolve) => (lost = resolve));
  const manager = new Manager({
    ...managerOptionsFromConfig(config, client, log),
    onLeadershipLost: () => lost(),
  });
  const operatorNamespace = process.env.POD_NAMESPACE ?? config.leaderElectionNamespace;
  const pollIntervalMs = overrides.pollIntervalMs ?? config.pollIntervalMs;
  const controllers: Controller<KubeObject>[] = [];
  const platformMetrics = registerOperatorMetrics({
    registry: manager.metrics.registry,
    version,
    controllers: () => controllers,
  });
  const access = new PlatformAccess({
    baseUrl: config.platformBaseUrl,
    defaultCredentials: parseDefaultCredentials(config.defaultCredentialsSecret, operatorNamespace),
    logger: log,
    clientOptions: {
      metrics: platformMetrics,
      pollIntervalMs,
      operationPolling: config.operationPolling,
      // Shards acting on one account each spend their share of its budget (docs/scale.md).
      ...(config.accountBudgetShare < 1 && { limits: accountShare(config.accountBudgetShare) }),
    },
  });
  // Alive (not ready) while the start-up reads below wait for the API server.
  await manager.serveProbes();
  const waiting = { log, signal: overrides.signal };
  let startupReads: { id: string; grants: boolean };
  try {
    startupReads = {
      // The owner marks of this installation (managed/installation.ts): read or made once, before
      // any controller may write one.
      id: await whenApiServerAnswers(
        "the installation id",
        () => installationId(client, operatorNamespace, { override: config.installationId, log }),
        waiting,
      ),
      // Their CRD is applied with the Deployment (deploy/base): a pod may start before the API
      // server serves it, and waits for it rather than exit.
      grants: await whenApiServerAnswers(
        "whether CredentialsGrants can be read: their CRD must be served",
        () => mayReadGrants(client, log),
        { ...waiting, retryable: (err) => isApiServerUnavailable(err) || isNotFound(err) },
      ),
    };
  } catch (err) {
    await manager.stop().catch(() => undefined);
    await access.close().catch(() => undefined);
    throw err;
  }
  const options: KindControllerOptions = {
    runtime: { client, metrics: manager.metrics, events: manager.events, log },
    access,
    installationId: startupReads.id,
    grants: startupReads.grants,
    namespaces: config.namespaces.length > 0 ? config.namespaces : undefined,
    concurrency: config.concurrency,
    resyncPeriodMs: config.resyncPeriodMs,
    pollIntervalMs,
  };
  // Metrics only read each controller's queue and caches, never hand it objects.
  controllers.push(...kindControllers(options, (o) => manager.controller(o)));
  if (
    config.watchLabelSelector &&
    config.leaderElection &&
    config.leaderElectionId === runtimeSettings.leaderElectionId.default
  ) {
    log.warn(
      { selector: config.watchLabelSelector.text },
      "a shard with the default --leader-election-id: shards sharing one Lease stand in for each other instead of running side by side; give each its own",
    );
  }
  await manager.start();
  log.info(
    {
      identity: manager.identity,
      namespaces: config.namespaces.length > 0 ? config.namespaces : "all",
      ...(config.watchLabelSelector && { shard: config.watchLabelSelector.text }),
      platform: config.platformBaseUrl,
    },
    "operator started",
  );
  return {
    manager,
    leadershipLost,
    async stop() {
      await manager.stop();
      await access.close();
    },
  };
}

/** The version in package.json (shipped beside dist/ and src/ alike); metrics and User-Agent name it. */
function operatorVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
      version?: string;
    };
    return pkg.version ?? "unknown";
  } catch {
    return "unknown";
  }
}

function defaultKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}

/**
 * Whether this installation may read CredentialsGrants and namespaces (cluster-scoped). A
 * namespaced install may not: its own key then serves only the namespace its Secret is in, and
 * it says so where a resource of another namespace would use it.
 */
async function mayReadGrants(client: KubeClient, log: Logger): Promise<boolean> {
  try {
    await client.list(credentialsGrantResource, { limit: 1 });
    await client.list(namespaceResource, { limit: 1 });
    return true;
  } catch (err) {
    if (!(err instanceof KubeApiError && err.statusCode === 403)) throw err;
    log.info(
      "this installation may not read CredentialsGrants or namespaces (a namespaced install): the operator's key serves only the namespace of its Secret",
    );
    return false;
  }
}
