// Configuration from command-line flags and environment variables (a flag wins over its
// variable), for any controller process. Each setting is declared once: flag, variable, zod
// schema, default and help text; a bad value is reported with the flag or variable it came from
// and the value itself. This file holds the settings every controller needs (namespaces,
// concurrency, leader election, ...); a process adds its own tables (the operator's platform
// settings are in src/config.ts).
import { parseArgs } from "node:util";
import { z } from "zod";
import { parseLabelSelector } from "./label-selector.ts";
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

export const duration = (min: number) =>
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

export const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const boolean = z
  .string()
  .transform((v) => v.trim().toLowerCase())
  .pipe(z.enum(["true", "false", "1", "0", "yes", "no"], { message: "expected true or false" }))
  .transform((v) => v === "true" || v === "1" || v === "yes");
export const integer = (min: number, max: number) =>
  z
    .string()
    .regex(/^\s*\d+\s*$/, "expected a whole number")
    .transform(Number)
    .pipe(z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

/** One setting: its flag, environment variable, schema (from the raw string) and default. */
export interface Setting {
  flag: string;
  env: string;
  help: string;
  schema: z.ZodType;
  default: string | undefined;
}

export const setting = <S extends z.ZodType>(
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

/** The settings of the runtime: what any controller process needs. */
export const runtimeSettings = {
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
  watchLabelSelector: setting(
    "watch-label-selector",
    z.string().transform((text, ctx) => {
      if (text.trim() === "") return undefined;
      try {
        return parseLabelSelector(text);
      } catch (err) {
        ctx.addIssue({ code: "custom", message: `expected a label selector: ${(err as Error).message}` });
        return z.NEVER;
      }
    }),
    "",
    "Reconcile only objects whose labels match (a shard, e.g. neoncloud.dev/shard=a; another instance takes !neoncloud.dev/shard). Every object is still cached. Give each shard its own --leader-election-id. Empty: every object.",
  ),
  shardHandoverMs: setting(
    "shard-handover-delay",
    duration(0),
    "60s",
    "With --watch-label-selector: how long an object whose labels moved it here from another shard waits before its first reconcile, so the other shard's running reconcile ends first.",
  ),
  concurrency: setting("concurrency", integer(1, 100), "4", "Objects of one kind reconciled at once."),
  resyncPeriodMs: setting(
    "resync-period",
    duration(1_000),
    "10m",
    "Every object is reconciled again this often (with jitter), to catch drift on the platform.",
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
    "Listen address of /healthz and /readyz, and of /metrics unless --metrics-secure.",
  ),
  metricsSecure: setting(
    "metrics-secure",
    boolean,
    "false",
    "Serve /metrics over HTTPS on --metrics-secure-address, each scrape's bearer token checked by the API server (TokenReview, then a SubjectAccessReview for get on /metrics).",
  ),
  metricsSecureAddress: setting(
    "metrics-secure-address",
    z.string().regex(/^(\[[0-9a-fA-F:]+\]|[^:]*):\d{1,5}$/, 'expected "host:port" or ":port"'),
    ":8443",
    "Listen address of /metrics over HTTPS, with --metrics-secure.",
  ),
  metricsCertDir: setting(
    "metrics-cert-dir",
    z.string().min(1, "expected a directory").optional(),
    undefined,
    "Directory holding tls.crt and tls.key for /metrics over HTTPS (read again each minute); without it a self-signed certificate is made at start.",
  ),
  shutdownDeadlineMs: setting(
    "shutdown-deadline",
    duration(0),
    "30s",
    "On SIGTERM, how long running reconciles may take to finish.",
  ),
} satisfies Record<string, Setting>;

export type Settings = Record<string, Setting>;
/** The parsed values of a settings table. */
export type ConfigOf<T extends Settings> = { [K in keyof T]: z.output<T[K]["schema"]> };
export type RuntimeConfig = ConfigOf<typeof runtimeSettings>;

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n  ${problems.join("\n  ")}`);
    this.name = "ConfigError";
    this.problems = problems;
  }
}

/** A boolean setting is a switch on the command line (`--flag`, `--no-flag`). */
const isSwitch = (s: Setting): boolean => s.schema === boolean;

/**
 * Reads `table` from flags (`--name=value`, `--name value`, `--flag`/`--no-flag` for switches)
 * and environment variables; every problem is collected before one ConfigError reports them all.
 */
export function loadSettings<T extends Settings>(
  table: T,
  argv: readonly string[],
  env: Record<string, string | undefined> = process.env,
): ConfigOf<T> {
  const byFlag = new Map(Object.entries(table).map(([key, s]) => [s.flag, key]));
  const problems: string[] = [];
  const fromFlags = new Map<string, string>();
  const { tokens } = parseArgs({
    args: [...argv],
    options: Object.fromEntries(
      Object.values(table).map((s) => [s.flag, { type: isSwitch(s) ? "boolean" : "string" }] as const),
    ),
    strict: false,
    allowPositionals: true,
    allowNegative: true,
    tokens: true,
  });
  for (const token of tokens) {
    if (token.kind === "option-terminator") continue;
    if (token.kind === "positional") {
      problems.push(`unknown argument "${token.value}"`);
      continue;
    }
    // With allowNegative, `--no-flag` arrives as `flag` (any option, so switches are checked here).
    const negated = token.rawName.startsWith("--no-");
    const key = byFlag.get(token.name);
    const setting = key === undefined ? undefined : table[key];
    const raw = `${token.rawName}${token.inlineValue ? `=${token.value}` : ""}`;
    if (key === undefined || setting === undefined || (negated && !isSwitch(setting))) {
      problems.push(`unknown argument "${raw}"`);
    } else if (isSwitch(setting)) {
      // `--flag`, `--no-flag`, or `--flag=false` (as the Deployment's args or a script may write it).
      if (token.value === undefined) fromFlags.set(key, negated ? "false" : "true");
      else if (negated) problems.push(`unknown argument "${raw}"`);
      else fromFlags.set(key, token.value);
    } else if (token.value === undefined) problems.push(`--${setting.flag} needs a value`);
    else fromFlags.set(key, token.value);
  }
  const config: Record<string, unknown> = {};
  for (const [key, s] of Object.entries(table)) {
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
  return config as ConfigOf<T>;
}

/** Help text for --help. */
export function settingsHelp(table: Settings): string {
  return Object.values(table)
    .map(
      (s) =>
        `  --${s.flag} (${s.env})${s.default !== undefined ? ` [default: ${s.default || '""'}]` : ""}\n      ${s.help}`,
    )
    .join("\n");
}
