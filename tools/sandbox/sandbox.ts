// `npm run dev`: everything on this machine in one
// command. A real local Kubernetes API server, the platform emulator with a
// demo account, and the operator; samples/ applied; Ctrl-C, SIGINT or SIGTERM
// stops it all (stopRequests below), and the logs stay in .tmp/sandbox/.
import { execFile } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdir, readdir, rm, symlink } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import { parseArgs, promisify } from "node:util";
import { KubeConfig } from "@kubernetes/client-node";
import { loadSeedFile, startEmulator } from "../../tools/emulator/index.ts";
import { credentialsGrant } from "../../src/api/grant.ts";
import { credentialsSecretLabels } from "../../src/controllers/managed/credentials.ts";
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
applies samples/. Needs a source checkout. Ctrl-C, SIGINT or SIGTERM to the
process you started (npm or node) stops everything; so does the end of that
npm process. The logs of each run stay in .tmp/sandbox/<run>/ (the last runs
are kept; .tmp/sandbox/latest is the newest).

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

  const say = (line: string) => process.stdout.write(`${line}\n`);
  const stop = stopRequests(say);
  const logDir = await runLogDir();
  const shownLogDir = relative(process.cwd(), logDir) || logDir;
  say(`sandbox: logs of this run in ${shownLogDir}/`);
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    say(`sandbox: stopped; the logs are kept in ${shownLogDir}/`);
  };
  /** A stop asked for while starting: what started so far is stopped, nothing more is started. */
  const stoppedEarly = async (): Promise<number | undefined> => {
    if (!stop.requested) return undefined;
    await stopAll();
    stop.dispose();
    return 0;
  };
  try {
    say("sandbox: starting the local Kubernetes API server...");
    const controlPlane = await startControlPlane({ logFile: join(logDir, "controlplane.log") });
    stops.push(() => controlPlane.stop());
    const early = await stoppedEarly();
    if (early !== undefined) return early;
    const kubectl = (args: string[], input?: string) => {
      const run = exec(controlPlane.binaries.kubectl, args, {
        env: { ...process.env, KUBECONFIG: controlPlane.kubeconfig },
      });
      if (input !== undefined) run.child.stdin?.end(input);
      return run;
    };
    await kubectl(["apply", "--server-side", "-f", join(repoRoot, "crds")]);
    await kubectl(["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]);

    // What the emulator does not honour, said before anyone relies on it (docs/emulator.md).
    say(
      "sandbox: starting the platform emulator with a demo account (its Postgres is PostgreSQL 18 for every " +
        "project, whatever the project's pgVersion says; docs/emulator.md)...",
    );
    const emulator = await startEmulator({
      port,
      seed: await loadSeedFile(join(repoRoot, "tools", "emulator", "seeds", "demo.yaml")),
    });
    stops.push(() => emulator.close());
    const earlier = await stoppedEarly();
    if (earlier !== undefined) return earlier;

    await kubectl(["create", "namespace", operatorNamespace]);
    // The bootstrap key goes over stdin, never on a command line.
    await kubectl(
      ["apply", "--server-side", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Secret",
        // Credentials Secrets opt in with this label (docs/security.md).
        metadata: { name: "neon-api-key", namespace: operatorNamespace, labels: credentialsSecretLabels },
        stringData: { apiKey: emulator.bootstrapKey },
      }),
    );
    await grantSamplesNamespace((args, input) => kubectl(args, input));
    // Minting takes a person's key: the organization's key makes no keys (docs/emulator.md). The
    // demo user's own key, in the samples' namespace, is what samples/apikey-ci.yaml mints with.
    const [, userKey] = [...emulator.bootstrapKeys].find(([account]) => account !== "org-demo") ?? [];
    await kubectl(
      ["apply", "--server-side", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "demo-user-key", namespace: "default", labels: credentialsSecretLabels },
        stringData: { apiKey: userKey ?? "" },
      }),
    );

    say("sandbox: starting the operator...");
    const logFile = join(logDir, "operator.log");
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
    const earliest = await stoppedEarly();
    if (earliest !== undefined) return earliest;

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
        "  kubectl get neon -A                                   # every ComputeEndpoint, ApiKey, Branch, Project, Snapshot",
        "  kubectl get cep -w                                    # watch endpoints become Ready",
        "  kubectl describe cep shop-dev                         # status, operations, events",
        "  kubectl get configmap shop-dev-connection -o yaml     # published connection details",
        "     # (the platform's form, host:5432 with TLS; the emulator's Postgres is where the Secret says)",
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
        `Operator metrics: ${operator.manager.serverUrl ?? "(off)"}/metrics`,
        `Logs: ${shownLogDir}/operator.log, ${shownLogDir}/controlplane.log (kept after the stop)`,
        `Ctrl-C, or SIGINT or SIGTERM to \`npm run dev\` or to this process (pid ${process.pid}), stops everything.`,
        "",
      ].join("\n"),
    );
    await stop.promise;
    await stopAll();
    stop.dispose();
    return 0;
  } catch (err) {
    process.stderr.write(`sandbox failed: ${err instanceof Error ? err.message : String(err)}\n`);
    await stopAll();
    stop.dispose();
    return 1;
  }
}

/**
 * The operator's default credentials serve a namespace only when a CredentialsGrant says so
 * (docs/security.md): the sandbox grants them to `default`, where samples/ go, for every project
 * of the demo account, as a platform team would grant a team's namespace.
 */
async function grantSamplesNamespace(
  kubectl: (args: string[], input?: string) => Promise<unknown>,
): Promise<void> {
  const grant = credentialsGrant("sandbox", {
    namespaces: ["default"],
    projects: ["*"],
    createProjects: true,
  });
  await kubectl(["apply", "-f", "-"], JSON.stringify(grant));
}

/** Runs kept under .tmp/sandbox/: the newest ones, so a crash or a stop leaves something to read. */
const keptRuns = 10;

/** A new directory for this run's logs, `.tmp/sandbox/<time>-<pid>`, and `latest` pointing at it. */
async function runLogDir(): Promise<string> {
  const base = join(repoRoot, ".tmp", "sandbox");
  await mkdir(base, { recursive: true });
  const name = `${new Date().toISOString().replace(/[:.]/g, "-")}-${process.pid}`;
  const dir = join(base, name);
  await mkdir(dir);
  const runs = (await readdir(base)).filter((f) => /^\d{4}-/.test(f)).sort();
  for (const old of runs.slice(0, Math.max(runs.length - keptRuns, 0)))
    await rm(join(base, old), { recursive: true, force: true });
  const latest = join(base, "latest");
  await rm(latest, { force: true });
  await symlink(name, latest).catch(() => undefined);
  return dir;
}

/**
 * When the sandbox must stop: SIGINT (Ctrl-C, `kill -INT`), SIGTERM (`timeout`, systemd, an
 * IDE), SIGHUP (the terminal closed), or the process that started it gone. `npm run dev` execs
 * node in place of its shell (package.json), so npm's own forwarding of SIGINT and SIGTERM
 * reaches this process; without that, the shell between them swallows SIGINT and dies of
 * SIGTERM, leaving this process behind. Should npm die without forwarding (SIGKILL), the parent
 * changes, which the watch below sees. The handlers stay installed while stopping: Ctrl-C in a
 * terminal reaches this process twice (from the terminal, and forwarded by npm), and the second
 * must not kill it halfway through its cleanup.
 */
function stopRequests(say: (line: string) => void): {
  promise: Promise<void>;
  readonly requested: boolean;
  dispose(): void;
} {
  let requested = false;
  let done!: () => void;
  const promise = new Promise<void>((resolvePromise) => (done = resolvePromise));
  const request = (why: string) => {
    if (requested) {
      say(`sandbox: ${why}; already stopping`);
      return;
    }
    requested = true;
    say(`sandbox: ${why}; stopping...`);
    done();
  };
  const signals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
  const handlers = signals.map((signal) => {
    const handler = () => request(`${signal} received`);
    process.on(signal, handler);
    return [signal, handler] as const;
  });
  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid !== parent) request(`the process that started the sandbox (pid ${parent}) is gone`);
  }, 500);
  watch.unref();
  return {
    promise,
    get requested() {
      return requested;
    },
    dispose() {
      clearInterval(watch);
      for (const [signal, handler] of handlers) process.off(signal, handler);
    },
  };
}
