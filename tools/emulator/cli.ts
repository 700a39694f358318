// `npm run emulator`: serves the emulator until interrupted,
// after printing one JSON line with its base URL and bootstrap key.
import { parseArgs } from "node:util";
import { startEmulator, type EmulatorOptions } from "./emulator.ts";
import { loadSeedFile } from "./seed.ts";

export const emulatorUsage = `Usage: npm run emulator -- [options]

Serves a local copy of the platform API. Prints one JSON line
{"url", "admin_url", "api_key"} once it listens (with "accounts": [{"id",
"api_key"}] when the seed has several); Ctrl-C stops it.

Options:
  --port N                      port to listen on (default 0: any free port)
  --host ADDR                   address to listen on (default 127.0.0.1)
  --seed FILE                   seed file (YAML or JSON): account, bootstrap key, projects,
                                branches, further accounts
  --state-file FILE             keep the world in FILE across restarts
  --speed X                     emulated time runs X times faster than real time (default 1)
  --operation-duration-ms N     emulated duration of each operation (default 1000)
  --operation-duration-jitter X each run lasts the duration × (1 ± X), drawn uniformly;
                                X in 0..1 (default 0)
  --random-seed N               seed of the jitter and fault rolls, so a run repeats
                                (default: a fresh one, shown by GET /emulator/operations/durations)
  --check-availability-ms N     interval of check_availability operations (default 0: off)
  --lock-scope project|branch   what a running operation locks against new changes (423):
                                the whole project (default, as the platform) or only its
                                branch (an optimistic variant)
  --missing-endpoint-delete 204|404
                                the answer to a DELETE of an endpoint that does not exist
                                or is already deleted (default 204, no body, as documented)
  --drop-deprecated-fields      leave out response fields the OpenAPI document marks
                                deprecated (pooler_enabled, pooler_mode, cpu_used_sec,
                                primary, login)
  --no-org-id-required          a user's key lists and creates projects without org_id even
                                when the user belongs to organizations (default: 400
                                "org_id is required", as the platform)
  --no-rate-limits              turn off the platform's rate limits (700/min, 40/s per route)
  --postgres-host ADDR          address the endpoints' Postgres ports listen on
                                (default 127.0.0.1)
  --postgres-advertised-host H  host the connection URIs name, e.g. one a pod can reach
                                (default: the --postgres-host)
  --postgres-idle-ms N          a database with no connection is dumped and stopped after
                                N real ms (default 30000)
  --no-postgres                 no Postgres behind connection URIs: they name the platform's
                                hosts, as the platform does
  -h, --help                    show this help
`;

export class UsageError extends Error {}

/** Parses the command line into emulator options; throws UsageError with a message for people. */
export async function parseEmulatorArgs(argv: string[]): Promise<EmulatorOptions | "help"> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        port: { type: "string" },
        host: { type: "string" },
        seed: { type: "string" },
        "state-file": { type: "string" },
        speed: { type: "string" },
        "operation-duration-ms": { type: "string" },
        "operation-duration-jitter": { type: "string" },
        "random-seed": { type: "string" },
        "check-availability-ms": { type: "string" },
        "lock-scope": { type: "string" },
        "missing-endpoint-delete": { type: "string" },
        "drop-deprecated-fields": { type: "boolean" },
        "no-rate-limits": { type: "boolean" },
        "no-org-id-required": { type: "boolean" },
        "postgres-host": { type: "string" },
        "postgres-advertised-host": { type: "string" },
        "postgres-idle-ms": { type: "string" },
        "no-postgres": { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (values.help) return "help";
  const number = (
    name: string,
    value: string | undefined,
    min: number,
    integer = true,
  ): number | undefined => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (value.trim() === "" || !Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) {
      throw new UsageError(
        `--${name} must be ${integer ? "an integer" : "a number"} >= ${min}, got "${value}"`,
      );
    }
    return n;
  };
  const port = number("port", values.port, 0);
  if (port !== undefined && port > 65535) throw new UsageError(`--port must be at most 65535, got ${port}`);
  const speed = number("speed", values.speed, Number.MIN_VALUE, false);
  const operationDurationMs = number("operation-duration-ms", values["operation-duration-ms"], 0);
  const operationDurationJitter = number(
    "operation-duration-jitter",
    values["operation-duration-jitter"],
    0,
    false,
  );
  if (operationDurationJitter !== undefined && operationDurationJitter > 1) {
    throw new UsageError(`--operation-duration-jitter must be at most 1, got ${operationDurationJitter}`);
  }
  const randomSeed = number("random-seed", values["random-seed"], 0);
  if (randomSeed !== undefined && randomSeed >= 2 ** 32) {
    throw new UsageError(`--random-seed must be below 2^32, got ${randomSeed}`);
  }
  const checkAvailabilityIntervalMs = number("check-availability-ms", values["check-availability-ms"], 0);
  const lockScope = values["lock-scope"];
  if (lockScope !== undefined && lockScope !== "branch" && lockScope !== "project") {
    throw new UsageError(`--lock-scope must be "branch" or "project", got "${lockScope}"`);
  }
  const missingDelete = values["missing-endpoint-delete"];
  if (missingDelete !== undefined && missingDelete !== "204" && missingDelete !== "404") {
    throw new UsageError(`--missing-endpoint-delete must be 204 or 404, got "${missingDelete}"`);
  }
  const postgresIdleMs = number("postgres-idle-ms", values["postgres-idle-ms"], 0);
  const postgresHost = values["postgres-host"];
  const advertisedHost = values["postgres-advertised-host"];
  const postgresFlags =
    postgresIdleMs !== undefined || postgresHost !== undefined || advertisedHost !== undefined;
  if (values["no-postgres"] && postgresFlags) {
    throw new UsageError("--no-postgres cannot be combined with the other --postgres-* options");
  }
  let seed;
  if (values.seed !== undefined) {
    try {
      seed = await loadSeedFile(values.seed);
    } catch (err) {
      throw new UsageError(`cannot use seed file ${values.seed}: ${(err as Error).message}`);
    }
  }
  return {
    ...(port === undefined ? {} : { port }),
    ...(values.host === undefined ? {} : { host: values.host }),
    ...(seed === undefined ? {} : { seed }),
    ...(values["state-file"] === undefined ? {} : { stateFile: values["state-file"] }),
    ...(speed === undefined ? {} : { speed }),
    ...(operationDurationMs === undefined ? {} : { operationDurationMs }),
    ...(operationDurationJitter === undefined ? {} : { operationDurationJitter }),
    ...(randomSeed === undefined ? {} : { randomSeed }),
    ...(checkAvailabilityIntervalMs === undefined ? {} : { checkAvailabilityIntervalMs }),
    ...(lockScope === undefined ? {} : { lockScope }),
    ...(missingDelete === undefined ? {} : { missingEndpointDelete: missingDelete === "204" ? 204 : 404 }),
    ...(values["drop-deprecated-fields"] ? { dropDeprecatedFields: true } : {}),
    ...(values["no-rate-limits"] ? { rateLimits: false as const } : {}),
    ...(values["no-org-id-required"] ? { orgIdRequired: false } : {}),
    ...(values["no-postgres"] ? { postgres: false as const } : {}),
    ...(postgresFlags
      ? {
          postgres: {
            ...(postgresHost === undefined ? {} : { listenHost: postgresHost }),
            ...(advertisedHost === undefined ? {} : { advertisedHost }),
            ...(postgresIdleMs === undefined ? {} : { idleMs: postgresIdleMs }),
          },
        }
      : {}),
  };
}

/** Runs the command; resolves with the exit code once the emulator has stopped. */
export async function runEmulatorCommand(argv: string[]): Promise<number> {
  let options;
  try {
    options = await parseEmulatorArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`emulator: ${err.message}\n\n${emulatorUsage}`);
    return 2;
  }
  if (options === "help") {
    process.stdout.write(emulatorUsage);
    return 0;
  }
  const emulator = await startEmulator(options);
  // With several accounts, every account's key too (the first is `api_key`).
  const accounts =
    emulator.bootstrapKeys.size > 1
      ? { accounts: [...emulator.bootstrapKeys].map(([id, key]) => ({ id, api_key: key })) }
      : {};
  process.stdout.write(
    `${JSON.stringify({ url: emulator.url, admin_url: emulator.adminUrl, api_key: emulator.bootstrapKey, ...accounts })}\n`,
  );
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await emulator.close();
  return 0;
}
