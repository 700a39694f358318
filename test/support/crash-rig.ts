// Crash scenarios from outside: one API proxy per test file, and per scenario
// a namespace with an operator ServiceAccount (talking through the proxy), the
// default credentials Secret, and the operator processes started and killed in
// it. Every line any of them wrote is kept for the leak check.
import { credentialsSecretLabels } from "../../src/controllers/managed/credentials.ts";
import { expect } from "vitest";
import { startApiProxy, type ApiProxy, type ProxyRule } from "./api-proxy.ts";
import { adminKubeConfig, createNamespace, kubectl } from "./kube.ts";
import { OperatorProcess, serviceAccountKubeconfigVia } from "./operator-process.ts";

export const defaultCredentialsName = "neon-operator-credentials";

export interface CrashRig {
  proxy: ApiProxy;
  /** Every line every operator process wrote. */
  lines: string[];
  namespaces: string[];
  /** A fresh namespace for a scenario, its operator not yet started. */
  scenario(prefix: string): Promise<RigScenario>;
  /**
   * A create killed at one step: a fresh scenario whose operator is held at `step` (its next
   * matching Kubernetes request), checked against the platform (`before` objects of the resource
   * exist at that moment) and killed; the resource has recorded no id. Resolves with a fresh
   * operator started, for the caller to see it finish.
   */
  killedAt(prefix: string, at: KillStep): Promise<RigScenario>;
  close(): Promise<void>;
}

export interface RigScenario {
  namespace: string;
  /** Kills the running operator, if any, and starts a fresh one; resolves when it is Ready. */
  start(): Promise<OperatorProcess>;
  /** kill -9 of the running operator. */
  kill(): Promise<void>;
}

export interface KillStep {
  /** The step's name, in the failure message. */
  name: string;
  /** The request held, in the scenario's namespace. */
  rule(namespace: string): Omit<ProxyRule, "action">;
  /** Applies the resource in the scenario's namespace. */
  apply(namespace: string): Promise<void>;
  /** The resource's objects on the platform. */
  onPlatform(namespace: string): Promise<unknown[]>;
  before: number;
  /** The platform id the resource's status records, if any. */
  recorded(namespace: string): Promise<string | undefined>;
}

export async function startCrashRig(platform: {
  url: string;
  bootstrapKey: string;
  pollInterval?: string;
}): Promise<CrashRig> {
  const proxy = await startApiProxy(adminKubeConfig());
  const lines: string[] = [];
  const namespaces: string[] = [];
  const processes = new Set<OperatorProcess>();

  const rig: CrashRig = {
    proxy,
    lines,
    namespaces,
    async scenario(prefix) {
      const namespace = await createNamespace(prefix);
      namespaces.push(namespace);
      const kubeconfig = await serviceAccountKubeconfigVia(proxy.url, namespace);
      await kubectl(["apply", "--server-side", "-n", namespace, "-f", "-"], {
        input: JSON.stringify({
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name: defaultCredentialsName, labels: credentialsSecretLabels },
          stringData: { apiKey: platform.bootstrapKey },
        }),
      });
      let running: OperatorProcess | undefined;
      const s: RigScenario = {
        namespace,
        async start() {
          await s.kill();
          running = await OperatorProcess.start({
            kubeconfig,
            platformUrl: platform.url,
            namespace,
            credentialsSecret: defaultCredentialsName,
            ...(platform.pollInterval ? { pollInterval: platform.pollInterval } : {}),
            lines,
          });
          processes.add(running);
          return running;
        },
        async kill() {
          await running?.kill();
          running = undefined;
        },
      };
      return s;
    },
    async killedAt(prefix, at) {
      const s = await rig.scenario(prefix);
      await s.start();
      const rule = proxy.arm({ ...at.rule(s.namespace), action: "hold", times: 1 });
      await at.apply(s.namespace);
      await rule.waitForHit(`the operator's request at ${at.name}`);
      // The moment is what the name says: the platform shows whether the object exists yet.
      expect(await at.onPlatform(s.namespace)).toHaveLength(at.before);
      await s.kill();
      proxy.reset();
      expect(await at.recorded(s.namespace)).toBeUndefined();
      await s.start();
      return s;
    },
    async close() {
      await Promise.all([...processes].map((p) => p.kill()));
      await proxy.close();
      await Promise.all(
        namespaces.map((ns) => kubectl(["delete", "namespace", ns, "--wait=false"]).catch(() => undefined)),
      );
    },
  };
  return rig;
}
