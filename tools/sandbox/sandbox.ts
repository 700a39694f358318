// `npm run dev`: everything on this machine in one
// command. A real local Kubernetes API server, the platform emulator with a
// demo account, and the operator; samples/ applied; Ctrl-C stops it all.
import { execFile } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs, promisify } from "node:util";
import { KubeConfig } from "@kubernetes/client-node";
import { loadSeedFile, startEmulator } from "../../tools/emulator/index.ts";
import { credentialsSecretLabels } from "../../src/controllers/credentials.ts";
import { startOperator } from "../../src/operator.ts";
import { loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/runtime/index.ts";
import { startControlPlane } from "./controlplane.ts";

const exec = promisify(execFile);
const repoRoot = resolve(import.meta.dirname, "..", "..");
const operatorNamespace = "neon-cloud-operator";

export const sandboxUsage = `Usage: npm run dev -- [options]

Starts a local sandbox: a Kubernetes API server (built from source with Go on
first use), the platform emulator with a demo account, and the operator; then
applies samples/. Needs a source checkout. Ctrl-C stops everything.

Options:
  --no-samples      do not apply samples/
  --port N          emulator port (default: any free port)
  -h, --help        this help
`;

export async function runSandboxCommand(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        samples: { type: "boolean", default: true },
        "no-samples": { type: "boolean" },
        port: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    }));
  } catch (err) {
    process.stderr.write(`dev: ${(err as Error).message}\n\n${sandboxUsage}`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(sandboxUsage);
    return 0;
  }
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`dev: --port must be a port number, got "${values.port}"\n`);
    return 2;
  }

  const workDir = await mkdtemp(join(tmpdir(), "neon-sandbox-"));
  const say = (line: string) => process.stdout.write(`${line}\n`);
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await rm(workDir, { recursive: true, force: true });
  };
  try {
    say("sandbox: starting the local Kubernetes API server...");
    const controlPlane = await startControlPlane({ logFile: join(workDir, "controlplane.log") });
    stops.push(() => controlPlane.stop());
    const kubectl = (args: string[], input?: string) => {
      const run = exec(controlPlane.binaries.kubectl, args, {
        env: { ...process.env, KUBECONFIG: controlPlane.kubeconfig },
      });
      if (input !== undefined) run.child.stdin?.end(input);
      return run;
    };
    await kubectl(["apply", "--server-side", "-f", join(repoRoot, "crds")]);
    await kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]);

    say("sandbox: starting the platform emulator with a demo account...");
    const emulator = await startEmulator({
      port,
      seed: await loadSeedFile(join(repoRoot, "tools", "emulator", "seeds", "demo.yaml")),
    });
    stops.push(() => emulator.close());

    await kubectl(["create", "namespace", operatorNamespace]);
    // The bootstrap key goes over stdin, never on a command line.
    await kubectl(
      ["apply", "--server-side", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "neon-api-key", namespace: operatorNamespace, labels: credentialsSecretLabels },
        stringData: { apiKey: emulator.bootstrapKey },
      }),
    );

    say("sandbox: starting the operator...");
    const logFile = join(workDir, "operator.log");
    const config = loadConfig([
      `--platform-base-url=${emulator.url}`,
      `--default-credentials-secret=${operatorNamespace}/neon-api-key`,
      "--no-leader-election",
      "--metrics-address=127.0.0.1:0",
      "--log-level=info",
    ]);
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(controlPlane.kubeconfig);
    const operator = await startOperator(config, createLogger("info", createWriteStream(logFile)), {
      kubeConfig,
    });
    stops.push(() => operator.stop());

    if (values.samples && !values["no-samples"]) {
      try {
        await kubectl(["apply", "-n", "default", "-f", join(repoRoot, "samples")]);
      } catch (err) {
        // kubectl applies every object it can; one the API server refuses should not stop the
        // sandbox, only be said.
        const stderr = (err as { stderr?: string }).stderr ?? String(err);
        say(`sandbox: some of samples/ was refused:\n${stderr.trim()}`);
      }
    }
    const k = controlPlane.binaries.kubectl;
    say(
      [
        "",
        `Sandbox ready. Kubernetes ${controlPlane.version}, platform emulator at ${emulator.url}`,
        "",
        `  export KUBECONFIG=${controlPlane.kubeconfig}`,
        `  alias kubectl=${k}`,
        "",
        "  kubectl get neon -A                                   # every ComputeEndpoint, ApiKey and Branch",
        "  kubectl get cep -w                                    # watch endpoints become Ready",
        "  kubectl describe cep shop-dev                         # status, operations, events",
        "  kubectl get configmap shop-dev-connection -o yaml     # published connection details",
        '  kubectl patch cep shop-dev --type=merge -p \'{"spec":{"computeUnits":{"min":1,"max":2}}}\'',
        '  kubectl patch cep shop-dev --type=merge -p \'{"spec":{"suspended":true}}\'',
        "  kubectl get secret ci-api-key                         # the ApiKey's Secret",
        "  kubectl delete cep shop-staging-replica               # deletes the endpoint on the platform",
        "  kubectl get branch                                    # Branches: id, state, expiry (-o wide)",
        "  kubectl describe branch shop-preview                  # its roles, databases, operations, events",
        "  kubectl annotate branch shop-preview neoncloud.dev/restoredFromParentAt=$(date -u +%FT%TZ)",
        "                                                        # reset it from its parent (dev)",
        "",
        "  # shop-preview's connection Secret, and psql with nothing but its DATABASE_URL:",
        "  kubectl get secret shop-preview-db -o jsonpath='{.data.DATABASE_URL}' | base64 -d; echo",
        "  psql \"$(kubectl get secret shop-preview-db -o jsonpath='{.data.DATABASE_URL}' | base64 -d)\" -c 'select version()'",
        "",
        `Operator metrics: ${operator.manager.serverUrl ?? "(off)"}/metrics   logs: ${logFile}`,
        "Ctrl-C stops everything.",
        "",
      ].join("\n"),
    );
    await new Promise<void>((done) => {
      process.once("SIGINT", () => done());
      process.once("SIGTERM", () => done());
    });
    say("sandbox: stopping...");
    await stopAll();
    say("sandbox: stopped.");
    return 0;
  } catch (err) {
    process.stderr.write(`sandbox failed: ${err instanceof Error ? err.message : String(err)}\n`);
    await stopAll();
    return 1;
  }
}
