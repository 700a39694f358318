// The operator process: one Manager (leader election, metrics and probes,
// graceful shutdown) running the controllers of every kind. Only wiring here.
import { KubeConfig } from "@kubernetes/client-node";
import type { OperatorConfig } from "./config.ts";
import { apiKeyController } from "./controllers/apikey.ts";
import { branchController } from "./controllers/branch.ts";
import { computeEndpointController } from "./controllers/computeendpoint.ts";
import { PlatformAccess, parseDefaultCredentials } from "./controllers/credentials.ts";
import type { KindControllerOptions } from "./controllers/options.ts";
import { KubeClient, Manager, managerOptionsFromConfig, type Logger } from "./runtime/index.ts";

export interface RunningOperator {
  manager: Manager;
  stop(): Promise<void>;
}

export interface OperatorOverrides {
  /** Kubernetes access; default: $KUBECONFIG, ~/.kube/config, or the pod's ServiceAccount. */
  kubeConfig?: KubeConfig;
  /** Interval between looks at running platform operations; wins over `--poll-interval`. */
  pollIntervalMs?: number;
}

export async function startOperator(
  config: OperatorConfig,
  log: Logger,
  overrides: OperatorOverrides = {},
): Promise<RunningOperator> {
  const kubeConfig = overrides.kubeConfig ?? defaultKubeConfig();
  const client = new KubeClient(kubeConfig);
  const manager = new Manager(managerOptionsFromConfig(config, client, log));
  const operatorNamespace = process.env.POD_NAMESPACE ?? config.leaderElectionNamespace;
  const pollIntervalMs = overrides.pollIntervalMs ?? config.pollIntervalMs;
  const access = new PlatformAccess({
    baseUrl: config.platformBaseUrl,
    defaultCredentials: parseDefaultCredentials(config.defaultCredentialsSecret, operatorNamespace),
    logger: log,
    clientOptions: {
      metrics: manager.metrics.platform,
      pollIntervalMs,
      operationPolling: config.operationPolling,
    },
  });
  const options: KindControllerOptions = {
    runtime: { client, metrics: manager.metrics, events: manager.events, log },
    access,
    namespaces: config.namespaces.length > 0 ? config.namespaces : undefined,
    concurrency: config.concurrency,
    resyncPeriodMs: config.resyncPeriodMs,
    pollIntervalMs,
  };
  computeEndpointController(options, (o) => manager.controller(o));
  apiKeyController(options, (o) => manager.controller(o));
  branchController(options, (o) => manager.controller(o));
  await manager.start();
  log.info(
    {
      identity: manager.identity,
      namespaces: config.namespaces.length > 0 ? config.namespaces : "all",
      platform: config.platformBaseUrl,
    },
    "operator started",
  );
  return {
    manager,
    async stop() {
      await manager.stop();
      await access.close();
    },
  };
}

function defaultKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return kc;
}
