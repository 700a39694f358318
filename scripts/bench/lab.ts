// The bench's Kubernetes side: a real local control plane with the CRDs, a
// kubeconfig for the operator as its own user (so the API server's priority-and-
// fairness metrics count the operator's requests apart from everyone else's),
// kubectl, and the operator built as its image runs it.
import { execFile } from "node:child_process";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { KubeConfig } from "@kubernetes/client-node";
import { credentialsSecretLabels } from "../../src/controllers/managed/credentials.ts";
import { startControlPlane, type ControlPlane } from "../../tools/sandbox/controlplane.ts";
import { buildOperator, type OperatorBuild } from "./operator-build.ts";

const exec = promisify(execFile);
export const repoRoot = resolve(import.meta.dirname, "..", "..");
const operatorUser = "bench-operator";

export interface Lab {
  controlPlane: ControlPlane;
  /** Admin kubeconfig path (system:masters; the bench's own requests are "exempt"). */
  kubeconfig: string;
  adminKubeConfig: KubeConfig;
  /** Kubeconfig of the operator's user, bound to cluster-admin. */
  operatorKubeconfig: string;
  /** The operator compiled from this tree, with the image's Node flags. */
  operator: OperatorBuild;
  kubectl(args: string[], input?: string): Promise<string>;
  createNamespace(name: string): Promise<void>;
  /** The platform key in a Secret, passed over stdin so it never shows on a command line. */
  createCredentialsSecret(namespace: string, name: string, apiKey: string): Promise<void>;
  /** Requests the API server dispatched for the operator's user (priority-and-fairness counters). */
  operatorRequests(): Promise<number>;
  /** `apiserver_request_total` summed by verb and resource (every client). */
  requestsByVerb(): Promise<Map<string, number>>;
  /** Seconds the API server spent on, and its priority-and-fairness queues held, the operator's writes so far. */
  writeSeconds(): Promise<{ writes: number; servedSeconds: number; queuedSeconds: number }>;
  stop(): Promise<void>;
}

export async function startLab(workDir: string): Promise<Lab> {
  const [controlPlane, operator] = await Promise.all([
    startControlPlane({ logFile: join(workDir, "controlplane.log") }),
    buildOperator(workDir),
  ]);
  const kubeconfig = controlPlane.kubeconfig;
  const kubectl = async (args: string[], input?: string): Promise<string> => {
    const run = exec(controlPlane.binaries.kubectl, args, {
      env: { ...process.env, KUBECONFIG: kubeconfig },
      maxBuffer: 256 * 1024 * 1024,
    });
    if (input !== undefined) run.child.stdin?.end(input);
    return (await run).stdout;
  };
  await kubectl(["apply", "--server-side", "-f", join(repoRoot, "crds")]);
  await kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]);
  const operatorKubeconfig = await controlPlane.mintUser(operatorUser);
  await kubectl([
    "create",
    "clusterrolebinding",
    operatorUser,
    "--clusterrole=cluster-admin",
    `--user=${operatorUser}`,
  ]);
  const adminKubeConfig = new KubeConfig();
  adminKubeConfig.loadFromFile(kubeconfig);

  const metrics = () => kubectl(["get", "--raw", "/metrics"]);
  return {
    controlPlane,
    kubeconfig,
    adminKubeConfig,
    operatorKubeconfig,
    operator,
    kubectl,
    async createNamespace(name) {
      await kubectl(["create", "namespace", name]);
    },
    async createCredentialsSecret(namespace, name, apiKey) {
      await kubectl(
        ["apply", "--server-side", "-f", "-"],
        JSON.stringify({
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name, namespace, labels: credentialsSecretLabels },
          stringData: { apiKey },
        }),
      );
    },
    async operatorRequests() {
      // A user outside system:masters with no other match lands in the global-default flow.
      let total = 0;
      for (const line of (await metrics()).split("\n")) {
        if (!line.startsWith("apiserver_flowcontrol_dispatched_requests_total{")) continue;
        if (!line.includes('flow_schema="global-default"')) continue;
        total += Number(line.slice(line.lastIndexOf(" ") + 1));
      }
      return total;
    },
    async requestsByVerb() {
      const out = new Map<string, number>();
      for (const line of (await metrics()).split("\n")) {
        if (!line.startsWith("apiserver_request_total{")) continue;
        const label = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(line)?.[1] ?? "";
        const sub = label("subresource");
        const key = `${label("verb")} ${label("resource")}${sub ? `/${sub}` : ""}`;
        out.set(key, (out.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1)));
      }
      return out;
    },
    async writeSeconds() {
      let writes = 0;
      let servedSeconds = 0;
      let queuedSeconds = 0;
      const value = (line: string) => Number(line.slice(line.lastIndexOf(" ") + 1));
      for (const line of (await metrics()).split("\n")) {
        const write =
          /verb="(PATCH|PUT|POST|DELETE)"/.test(line) && line.includes('resource="computeendpoints"');
        if (write && line.startsWith("apiserver_request_duration_seconds_count{")) writes += value(line);
        if (write && line.startsWith("apiserver_request_duration_seconds_sum{")) servedSeconds += value(line);
        if (
          line.startsWith("apiserver_flowcontrol_request_wait_duration_seconds_sum{") &&
          line.includes('flow_schema="global-default"')
        )
          queuedSeconds += value(line);
      }
      return { writes, servedSeconds, queuedSeconds };
    },
    stop: () => controlPlane.stop(),
  };
}
