// ApiKey scenarios against the real API server and the emulator over HTTP:
// one emulator per test file, one namespace (with the operator's default
// credentials Secret in it) per scenario, controllers started and stopped at will.
// Crashes are produced from outside, with operator processes: crash.kube.test.ts.
import { apiKeyKind } from "../../src/api/index.ts";
import {
  type ApiKeyObject,
  type ApiKeyTuning,
  apiKeyResourceKind,
} from "../../src/controllers/apikey/index.ts";
import {
  credentialsSecretLabels,
  decodeSecretValue,
  secretKind,
  type Secret,
} from "../../src/controllers/managed/credentials.ts";
import { PlatformAccess } from "../../src/controllers/access/platform-access.ts";
import type { KindControllerOptions } from "../../src/controllers/options.ts";
import {
  fastRetry,
  generousLimits,
  startPlatform,
  type TestPlatform,
} from "../../test/support/platform/platform.ts";
import {
  ContentType,
  type Controller,
  EventRecorder,
  KubeClient,
  eventKind,
  type KubeObject,
} from "../../src/runtime/index.ts";
import { expect } from "vitest";
import { adminKubeConfig, createNamespace, eventually, kubectl } from "../support/kube.ts";
import type { ApiKey } from "../../src/platform/index.ts";
import type { z } from "zod";
import type { ApiKeySpec } from "../../src/api/apikey.ts";
import { LogCapture } from "../support/operator.ts";
import { apiKeyController } from "../../src/controllers/registry.ts";

export const defaultCredentialsName = "neon-operator-credentials";

export interface ApiKeyWorld {
  platform: TestPlatform;
  kube: KubeClient;
  /** Every log line the operator wrote (controllers and platform clients), raw JSON. */
  logLines: string[];
  /** Every key value the tests saw, to prove none of them leaked. */
  seenValues: Set<string>;
  namespaces: string[];
  scenario(prefix: string): Promise<Scenario>;
  close(): Promise<void>;
}

export interface Scenario {
  namespace: string;
  /** Shifts the controllers' clock (rotation schedules) by this much. */
  clockOffsetMs: number;
  start(options?: { tuning?: ApiKeyTuning }): Promise<Controller<ApiKeyObject>>;
  stop(controller: Controller<ApiKeyObject>): Promise<void>;
  create(name: string, spec?: z.input<typeof ApiKeySpec>): Promise<void>;
  get(name: string): Promise<ApiKeyObject | undefined>;
  /** Wakes the controllers (an annotation change), e.g. after moving the clock. */
  touch(name: string): Promise<void>;
  secret(name: string): Promise<Secret | undefined>;
  /** The Secret's key and id; the value is remembered for the leak check. */
  stored(secretName: string): Promise<{ keyId: number; value: string } | undefined>;
  waitReady(name: string, check?: (obj: ApiKeyObject) => boolean): Promise<ApiKeyObject>;
  events(): Promise<{ reason?: string; type?: string; note?: string }[]>;
}

export async function startApiKeyWorld(): Promise<ApiKeyWorld> {
  const platform = await startPlatform();
  const kube = new KubeClient(adminKubeConfig());
  const capture = new LogCapture();
  const log = capture.logger;
  const logLines = capture.lines;
  const seenValues = new Set<string>([platform.emulator.bootstrapKey]);
  const namespaces: string[] = [];
  const controllers = new Set<Controller<ApiKeyObject>>();
  const accesses: PlatformAccess[] = [];

  async function scenario(prefix: string): Promise<Scenario> {
    const namespace = await createNamespace(prefix);
    namespaces.push(namespace);
    await kube.create(secretKind, {
      metadata: { name: defaultCredentialsName, namespace, labels: credentialsSecretLabels },
      stringData: { apiKey: platform.emulator.bootstrapKey },
    });
    const events = new EventRecorder(kube, {
      controller: "neoncloud.dev/operator",
      instance: "test",
      minWriteIntervalMs: 200,
      log,
    });
    const s: Scenario = {
      namespace,
      clockOffsetMs: 0,
      async start(options = {}) {
        const access = new PlatformAccess({
          baseUrl: platform.emulator.url,
          defaultCredentials: { namespace, name: defaultCredentialsName, key: "apiKey" },
          clientOptions: { limits: generousLimits, retry: fastRetry },
          logger: log,
        });
        accesses.push(access);
        const kindOptions: KindControllerOptions = {
          runtime: { client: kube, events, log },
          access,
          namespaces: [namespace],
          now: () => new Date(Date.now() + s.clockOffsetMs),
          informer: { freeze: true },
        };
        const controller = apiKeyController(kindOptions, undefined, {
          usageRefreshMs: 1_000,
          ...options.tuning,
        });
        controllers.add(controller);
        controller.startCaches();
        await controller.waitForSync();
        controller.startWorkers();
        return controller;
      },
      async stop(controller) {
        controllers.delete(controller);
        await controller.stop();
      },
      async create(name, spec = {}) {
        await kube.create(apiKeyResourceKind, {
          apiVersion: apiKeyKind.apiVersion,
          kind: apiKeyKind.kind,
          metadata: { name, namespace },
          spec,
        });
      },
      get: (name) => kube.get<ApiKeyObject>(apiKeyResourceKind, namespace, name),
      async touch(name) {
        await kube.patch(
          apiKeyResourceKind,
          namespace,
          name,
          { metadata: { annotations: { "test.neoncloud.dev/touched": String(Date.now()) } } },
          ContentType.MergePatch,
        );
      },
      secret: (name) => kube.get<Secret>(secretKind, namespace, name),
      async stored(secretName) {
        const secret = await kube.get<Secret>(secretKind, namespace, secretName);
        if (!secret) return undefined;
        const value = decodeSecretValue(secret, "apiKey");
        const id = decodeSecretValue(secret, "keyId");
        if (!value || !id) return undefined;
        seenValues.add(value);
        return { keyId: Number(id), value };
      },
      waitReady(name, check = () => true) {
        return eventually(
          async () => {
            const obj = await s.get(name);
            const ready = obj?.status?.conditions?.find((c) => c.type === "Ready");
            return ready?.status === "True" && !obj?.status?.pendingKeyName && obj && check(obj)
              ? obj
              : undefined;
          },
          { what: `ApiKey ${namespace}/${name} Ready`, timeoutMs: 30_000 },
        );
      },
      async events() {
        const list = await kube.list<KubeObject & { reason?: string; type?: string; note?: string }>(
          eventKind,
          { namespace },
        );
        return list.items;
      },
    };
    return s;
  }

  return {
    platform,
    kube,
    logLines,
    seenValues,
    namespaces,
    scenario,
    async close() {
      await Promise.all([...controllers].map((c) => c.stop()));
      await Promise.all(accesses.map((a) => a.close()));
      await platform.close();
      await Promise.all(namespaces.map((ns) => kubectl(["delete", "namespace", ns, "--wait=false"])));
    },
  };
}

/** Whether the platform accepts `value` as a key: a plain request, as any consumer of the Secret would send. */
export async function authenticates(world: Pick<ApiKeyWorld, "platform">, value: string): Promise<boolean> {
  const response = await fetch(`${world.platform.emulator.url}/api_keys`, {
    headers: { authorization: `Bearer ${value}` },
  });
  await response.arrayBuffer();
  if (response.status !== 200 && response.status !== 401)
    throw new Error(`unexpected status ${response.status}`);
  return response.status === 200;
}

/** The live keys on the platform whose names this operator gave for `keyName`. */
export async function liveKeys(world: Pick<ApiKeyWorld, "platform">, keyName: string): Promise<ApiKey[]> {
  const client = world.platform.client();
  const keys = await client.listApiKeys();
  return keys.filter((k) => k.name.startsWith(`${keyName}-`));
}

/** Every key value the tests saw (read from Secrets) is absent from the logs, the Events and the ApiKeys. */
export async function expectNoKeyValueLeaked(world: ApiKeyWorld): Promise<void> {
  const values = [...world.seenValues];
  expect(values.length).toBeGreaterThan(1);
  const events = JSON.stringify(
    await Promise.all(world.namespaces.map((ns) => world.kube.list(eventKind, { namespace: ns }))),
  );
  expect(events).toContain('"reason"'); // Events were recorded, so the check means something
  const apiKeys = JSON.stringify(
    await Promise.all(world.namespaces.map((ns) => kubectl(["get", "apikeys", "-n", ns, "-o", "json"]))),
  );
  const logs = world.logLines.join("\n");
  expect(world.logLines.length).toBeGreaterThan(0);
  for (const value of values) {
    expect(logs.includes(value), "a key value in the logs").toBe(false);
    expect(events.includes(value), "a key value in an Event").toBe(false);
    expect(apiKeys.includes(value), "a key value in an ApiKey").toBe(false);
  }
}
