#!/usr/bin/env node
// neon-cloud-operator: the operator's command line (run it, print its CRDs).
// The platform emulator and the local sandbox are development tools in the
// repository (tools/), not part of the package or the image.
import { setTimeout } from "node:timers/promises";
import { renderAllCrds } from "./api/index.ts";
import { configHelp, loadConfig } from "./config.ts";
import { ConfigError, terminationSignal } from "./runtime/index.ts";
import { createLogger } from "./runtime/log.ts";

const usage = `Usage: neon-cloud-operator <command> [options]

Commands:
  run        run the operator (in a cluster, or against $KUBECONFIG)
  crds       print the CustomResourceDefinitions (kubectl apply -f -)

The platform emulator and the local sandbox are development tools: from a
checkout of the repository, run "npm run emulator" or "npm run dev".

Run "neon-cloud-operator <command> --help" for a command's options.
`;

const runUsage = `Usage: neon-cloud-operator run [options]

Runs the operator. Kubernetes access comes from $KUBECONFIG, ~/.kube/config or the
pod's ServiceAccount. Every option can also be set by its environment variable.

Options:
${configHelp()}
`;

async function run(argv: string[]): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(runUsage);
    return 0;
  }
  let config;
  try {
    config = loadConfig(argv);
  } catch (err) {
    if (err instanceof ConfigError) {
      // The problems only: a page of usage after them would push them out of a pod's last log lines.
      process.stderr.write(
        `neon-cloud-operator run: ${err.message}\n\nSee "neon-cloud-operator run --help" for every option.\n`,
      );
      return 2;
    }
    throw err;
  }
  const log = createLogger(config.logLevel);
  const signalled = terminationSignal();
  const { startOperator } = await import("./operator.ts");
  // A stop asked for while the start still waits for the API server ends the wait.
  const starting = new AbortController();
  void signalled.then(() => starting.abort());
  let operator;
  try {
    operator = await startOperator(config, log, { signal: starting.signal });
  } catch (err) {
    if (!starting.signal.aborted) throw err;
    log.info("stopped before the operator started");
    return 0;
  }
  const ended = await Promise.race([signalled, operator.leadershipLost.then(() => "leadership lost")]);
  if (ended === "leadership lost") {
    // As controller-runtime does: a replica that lost its lease exits (its pod restarts, and
    // rejoins as a standby) rather than resume acting on whatever it held when it lost it. The
    // API server may be what it lost (hanging requests), so the clean-up gets two seconds at most.
    log.error("lost the leader lease; in-flight work was aborted; exiting");
    await Promise.race([operator.stop().catch(() => undefined), setTimeout(2_000)]);
    process.exit(1);
  }
  log.info({ signal: ended }, "shutting down");
  try {
    await operator.stop();
  } catch (err) {
    log.error({ err }, "shutdown failed");
  }
  log.info("stopped");
  return 0;
}

function crds(argv: string[]): number {
  if (argv.length > 0) {
    const help = argv.includes("--help") || argv.includes("-h");
    (help ? process.stdout : process.stderr).write(
      "Usage: neon-cloud-operator crds\n\nPrints the CRDs as YAML: neon-cloud-operator crds | kubectl apply -f -\n",
    );
    return help ? 0 : 2;
  }
  process.stdout.write(renderAllCrds());
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "run":
      return run(rest);
    case "emulator":
    case "dev":
      process.stderr.write(
        `neon-cloud-operator: "${command}" is a development tool and is not part of the package; ` +
          `from a checkout of the repository run "npm run ${command}"\n`,
      );
      return 2;
    case "crds":
      return crds(rest);
    case undefined:
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(usage);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`neon-cloud-operator: unknown command "${command}"\n\n${usage}`);
      return 2;
  }
}

process.exitCode = await main(process.argv.slice(2));
