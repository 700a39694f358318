// The operator's configuration from command-line flags and environment
// variables (a flag wins over its variable). Each setting is declared once
// below: flag, variable, zod schema, default and help text; a bad value is
// reported with the flag or variable it came from and the value itself.
import { z } from "zod";

/** Parses a Go-style duration ("500ms", "30s", "5m", "1h30m") to milliseconds. */
export function parseDuration(text: string): number | undefined {
  const units: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    total += Number(m[1]) * (units[m[2] ?? ""] ?? NaN);
    matched = re.lastIndex;
  }
  return text.length > 0 && matched === text.length && Number.isFinite(total) ? total : undefined;
}

const duration = (min: number) =>
  z.string().transform((text, ctx) => {
    const ms = parseDuration(text.trim());
    if (ms === undefined) {
      ctx.addIssue({ code: "custom", message: 'expected a duration such as "30s", "5m" or "1h"' });
      return z.NEVER;
    }
    if (ms < min) {
      ctx.addIssue({ code: "custom", message: `must be at least ${min} ms` });
      return z.NEVER;
    }
    return ms;
  });

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const boolean = z
  .string()
  .transform((v) => v.trim().toLowerCase())
  .pipe(z.enum(["true", "false", "1", "0", "yes", "no"], { message: "expected true or false" }))
  .transform((v) => v === "true" || v === "1" || v === "yes");
const integer = (min: number, max: number) =>
  z
    .string()
    .regex(/^\s*\d+\s*$/, "expected a whole number")
    .transform(Number)
    .pipe(z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

/** One setting: its flag, environment variable, schema (from the raw string) and default. */
interface Setting {
  flag: string;
  env: string;
  help: string;
  schema: z.ZodType;
  default: string | undefined;
}

const setting = <S extends z.ZodType>(
  flag: string,
  schema: S,
  defaultValue: string | undefined,
  help: string,
) => ({
  flag,
  env: `NEON_OPERATOR_${flag.toUpperCase().replace(/-/g, "_")}`,
  schema,
  default: defaultValue,
  help,
});

export const settings = {
  namespaces: setting(
    "namespaces",
    z
      .string()
      .transform((v) =>
        v
          .split(",")
          .map((s) => s.trim())
          .filter((s) => s !== "" && s !== "*"),
      )
      .pipe(z.array(z.string().regex(dnsLabel, "each namespace must be a DNS-1123 label"))),
    "",
    "Comma-separated namespaces to watch; empty watches all namespaces.",
  ),
  concurrency: setting("concurrency", integer(1, 100), "4", "Objects of one kind reconciled at once."),
  resyncPeriodMs: setting(
    "resync-period",
    duration(1_000),
    "10m",
    "Every object is reconciled again this often (with jitter), to catch drift on the platform.",
  ),
  pollIntervalMs: setting(
    "poll-interval",
    duration(10),
    "5s",
    "While platform operations run, look at them again this often (the platform recommends about 5s).",
  ),
  operationPolling: setting(
    "operation-polling",
    z.enum(["batched", "per-operation"], { message: "expected batched or per-operation" }),
    "batched",
    "How running operations are looked at: batched (one operations list per project) or per-operation (one GET each, as other clients do; for comparisons).",
  ),
  platformBaseUrl: setting(
    "platform-base-url",
    z.url({ protocol: /^https?$/, message: "expected an http(s) URL" }),
    "https://console.neon.tech/api/v2",
    "Base URL of the platform API.",
  ),
  defaultCredentialsSecret: setting(
    "default-credentials-secret",
    z
      .string()
      .regex(
        /^([a-z0-9]([-a-z0-9]*[a-z0-9])?\/)?[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/,
        'expected "name" or "namespace/name"',
      )
      .optional(),
    undefined,
    "Secret holding the platform API key used when a resource names none (name or namespace/name).",
  ),
  logLevel: setting(
    "log-level",
    z.enum(["fatal", "error", "warn", "info", "debug", "trace"], {
      message: "expected one of fatal, error, warn, info, debug, trace",
    }),
    "info",
    "Log level.",
  ),
  leaderElection: setting("leader-election", boolean, "true", "Elect one active replica through a Lease."),
  leaderElectionNamespace: setting(
    "leader-election-namespace",
    z.string().regex(dnsLabel, "expected a DNS-1123 label"),
    process.env.POD_NAMESPACE ?? "default",
    "Namespace of the leader-election Lease (defaults to $POD_NAMESPACE).",
  ),
  leaderElectionId: setting(
    "leader-election-id",
    z.string().regex(/^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/, "expected a DNS-1123 subdomain"),
    "neon-cloud-operator",
    "Name of the leader-election Lease.",
  ),
  metricsAddress: setting(
    "metrics-address",
    z.string().regex(/^(\[[0-9a-fA-F:]+\]|[^:]*):\d{1,5}$/, 'expected "host:port" or ":port"'),
    ":8080",
    "Listen address of /metrics, /healthz and /readyz.",
  ),
  shutdownDeadlineMs: setting(
    "shutdown-deadline",
    duration(0),
    "30s",
    "On SIGTERM, how long running reconciles may take to finish.",
  ),
} satisfies Record<string, Setting>;

type Settings = typeof settings;
export type OperatorConfig = { [K in keyof Settings]: z.output<Settings[K]["schema"]> };

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n  ${problems.join("\n  ")}`);
    this.name = "ConfigError";
    this.problems = problems;
  }
}

/** Reads flags (`--name=value`, `--name value`, `--flag`/`--no-flag` for booleans) and environment variables. */
export function loadConfig(
  argv: readonly string[],
  env: Record<string, string | undefined> = process.env,
): OperatorConfig {
  const byFlag = new Map(Object.entries(settings).map(([key, s]) => [s.flag, key as keyof Settings]));
  const fromFlags = new Map<keyof Settings, string>();
  const problems: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    const match = /^--(no-)?([a-z-]+)(?:=(.*))?$/s.exec(arg);
    const key = match ? byFlag.get(match[2] ?? "") : undefined;
    if (!match || key === undefined) {
      problems.push(`unknown argument "${arg}"`);
      continue;
    }
    const isBoolean = key === "leaderElection";
    if (match[1]) {
      if (!isBoolean || match[3] !== undefined) problems.push(`unknown argument "${arg}"`);
      else fromFlags.set(key, "false");
    } else if (match[3] !== undefined) fromFlags.set(key, match[3]);
    else if (isBoolean) fromFlags.set(key, "true");
    else if (i + 1 < argv.length) fromFlags.set(key, argv[++i] ?? "");
    else problems.push(`--${settings[key].flag} needs a value`);
  }
  const config: Record<string, unknown> = {};
  for (const [key, s] of Object.entries(settings) as [keyof Settings, Setting][]) {
    const flagValue = fromFlags.get(key);
    const envValue = env[s.env];
    const raw = flagValue ?? envValue ?? s.default;
    const source = flagValue !== undefined ? `--${s.flag}` : envValue !== undefined ? s.env : "default";
    if (raw === undefined) {
      config[key] = undefined;
      continue;
    }
    const result = s.schema.safeParse(raw);
    if (result.success) config[key] = result.data;
    else problems.push(`${source} = "${raw}": ${result.error.issues.map((i) => i.message).join("; ")}`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config as OperatorConfig;
}

/** Help text for --help. */
export function configHelp(): string {
  return Object.values(settings)
    .map(
      (s) =>
        `  --${s.flag} (${s.env})${s.default !== undefined ? ` [default: ${s.default || '""'}]` : ""}\n      ${s.help}`,
    )
    .join("\n");
}
