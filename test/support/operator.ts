// An operator for scenario tests: a platform emulator over real HTTP, the
// real API server of the global setup, and a kind's controller running in
// this process, watching one namespace of its own.
import { Writable } from "node:stream";
import { pino, type Logger } from "pino";
import { inject } from "vitest";
import { credentialsSecretLabels } from "../../src/controllers/managed/credentials.ts";
import { PlatformAccess } from "../../src/controllers/access/platform-access.ts";
import { installationId } from "../../src/controllers/managed/installation.ts";
import type { KindControllerOptions } from "../../src/controllers/options.ts";
import { startEmulator, type Emulator, type EmulatorOptions } from "../../tools/emulator/index.ts";
import { PlatformClient } from "../../src/platform/index.ts";
import {
  EventRecorder,
  KubeClient,
  loggerOptions,
  SharedInformers,
  type Controller,
  type KubeObject,
} from "../../src/runtime/index.ts";
import { adminKubeConfig, createNamespace, kubectl } from "./kube.ts";

export const credentialsSecret = "neon-api-key";

/** A project with a primary branch (which gets its read-write endpoint) and three empty branches. */
export const testSeed = {
  projects: [
    {
      id: "proj-alpha",
      name: "alpha",
      primary_branch: "main",
      branches: [
        { id: "br-dev", name: "dev" },
        { id: "br-staging", name: "staging" },
        { id: "br-feature", name: "feature" },
      ],
    },
  ],
};

/** Every log line the operator wrote, to assert that no key value ever appears. */
export class LogCapture {
  readonly lines: string[] = [];
  readonly logger: Logger;
  constructor() {
    const sink = new Writable({
      write: (chunk: Buffer, _enc, done) => {
        this.lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
        done();
      },
    });
    // The operator's options (reconcile fields, error shape) without the redaction safety net,
    // so a test asserting that no key value is logged sees what the code itself wrote.
    this.logger = pino({ ...loggerOptions("debug"), redact: undefined }, sink);
  }
  text(): string {
    return this.lines.join("\n");
  }
}

export interface OperatorHarness {
  namespace: string;
  emulator: Emulator;
  /** A platform client with the bootstrap key, to look at (or change) the platform directly. */
  platform: PlatformClient;
  kube: KubeClient;
  logs: LogCapture;
  /** Starts a fresh controller (a new operator process, as far as state goes). */
  start(overrides?: Partial<KindControllerOptions>): Promise<Controller<KubeObject>>;
  /** Stops the running controller at once, like a killed process. */
  kill(): Promise<void>;
  apply(manifest: object): Promise<void>;
  get<T extends KubeObject>(plural: string, name: string): Promise<T>;
  stop(): Promise<void>;
}

export async function startOperatorHarness(
  factory: (options: KindControllerOptions) => Controller<KubeObject>,
  options: { emulator?: EmulatorOptions; pollIntervalMs?: number; prefix?: string } = {},
): Promise<OperatorHarness> {
  const namespace = await createNamespace(options.prefix ?? "op");
  const emulator = await startEmulator({
    rateLimits: false,
    operationDurationMs: 150,
    seed: testSeed,
    ...options.emulator,
  });
  const platform = new PlatformClient({ baseUrl: emulator.url, apiKey: emulator.bootstrapKey });
  await kubectl(["apply", "--server-side", "-f", "-"], {
    input: JSON.stringify({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: credentialsSecret, namespace, labels: credentialsSecretLabels },
      stringData: { apiKey: emulator.bootstrapKey },
    }),
  });
  const kube = new KubeClient(adminKubeConfig());
  const logs = new LogCapture();
  let running: Controller<KubeObject> | undefined;
  let access: PlatformAccess | undefined;
  let informers: SharedInformers | undefined;

  const harness: OperatorHarness = {
    namespace,
    emulator,
    platform,
    kube,
    logs,
    async start(overrides = {}) {
      await harness.kill();
      access = new PlatformAccess({
        baseUrl: emulator.url,
        defaultCredentials: { namespace, name: credentialsSecret, key: "apiKey" },
        logger: logs.logger,
        clientOptions: { pollIntervalMs: options.pollIntervalMs ?? 100 },
      });
      const events = new EventRecorder(kube, {
        controller: "neoncloud.dev/neon-cloud-operator",
        instance: `test-${process.pid}`,
        log: logs.logger,
      });
      // Its controllers share their informers, as the operator's Manager gives them.
      informers = new SharedInformers(kube);
      const controller = factory({
        runtime: { client: kube, events, log: logs.logger, informers },
        access,
        // As an operator process does: the id kept in the namespace's identity ConfigMap, so the
        // owner marks of an in-process controller and of a process in this namespace agree.
        installationId: await installationId(kube, namespace),
        namespaces: [namespace],
        pollIntervalMs: options.pollIntervalMs ?? 100,
        // A controller that mutates a cached object instead of copying it fails loudly.
        informer: { freeze: true },
        ...overrides,
      });
      running = controller;
      controller.startCaches();
      await controller.waitForSync();
      controller.startWorkers();
      return controller;
    },
    async kill() {
      await running?.stop(0);
      running = undefined;
      await informers?.stop();
      informers = undefined;
      await access?.close();
      access = undefined;
    },
    async apply(manifest) {
      await kubectl(["apply", "-n", namespace, "-f", "-"], { input: JSON.stringify(manifest) });
    },
    async get<T extends KubeObject>(plural: string, name: string): Promise<T> {
      return JSON.parse(await kubectl(["get", plural, name, "-n", namespace, "-o", "json"])) as T;
    },
    async stop() {
      await harness.kill();
      await platform.close();
      await emulator.close();
      await kubectl(["delete", "namespace", namespace, "--wait=false"]);
    },
  };
  return harness;
}

/** Reads the kubeconfig path handed over by the global setup (for code that needs a file). */
export function kubeconfigPath(): string {
  return inject("kubeconfig");
}
