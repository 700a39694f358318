// The operator's configuration: the runtime's settings (namespaces, concurrency, leader election,
// metrics address, ...) plus the platform's, which the generic runtime knows nothing of.
import { z } from "zod";
import {
  duration,
  loadSettings,
  runtimeSettings,
  setting,
  settingsHelp,
  type ConfigOf,
} from "./runtime/index.ts";

export const platformSettings = {
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
  accountBudgetShare: setting(
    "account-budget-share",
    z
      .string()
      .transform(Number)
      .pipe(z.number({ message: "expected a number" }).gt(0, "must be above 0").max(1, "must be at most 1")),
    "1",
    "The share of each platform account's request budget (700 a minute, 40 a second per route) this instance spends: with shards acting on one account, their shares must add up to at most 1 (e.g. 0.5 each of two).",
  ),
  installationId: setting(
    "installation-id",
    z
      .string()
      .regex(/^[0-9a-f]{8}$/, "expected 8 lowercase hex digits")
      .optional(),
    undefined,
    "This installation's id in the owner marks it writes on the platform. Default: the one kept in ConfigMap neon-cloud-operator-identity of the operator's namespace (made at the first start). Set it to keep an earlier installation's marks (a reinstall into a new cluster).",
  ),
};

export const operatorSettings = { ...runtimeSettings, ...platformSettings };

export type OperatorConfig = ConfigOf<typeof operatorSettings>;

/** Reads the operator's flags and `NEON_OPERATOR_*` variables; throws ConfigError listing every bad value. */
export function loadConfig(
  argv: readonly string[],
  env: Record<string, string | undefined> = process.env,
): OperatorConfig {
  return loadSettings(operatorSettings, argv, env);
}

/** Help text for `run --help`. */
export function configHelp(): string {
  return settingsHelp(operatorSettings);
}
