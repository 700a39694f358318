// The GitOps tools' own code, run on objects and manifests of this project:
// Argo CD's Lua engine (gopher-lua), kstatus (Flux, cli-utils) and Prometheus's
// rule parser, in one Go program (test/tools/gitops/) built from the module
// proxy and cached like the control plane and helm.
import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { stderrLog, type Log } from "../../tools/sandbox/go-build.ts";
import { buildModuleTool } from "./go-modules.ts";

const exec = promisify(execFile);

export const gitopsModuleDir = resolve(import.meta.dirname, "..", "tools", "gitops");
export const repoRoot = resolve(import.meta.dirname, "..", "..");

/** Argo CD's health codes. */
export type ArgoHealth = "Healthy" | "Progressing" | "Degraded" | "Suspended" | "Missing" | "Unknown";
/** kstatus' statuses. */
export type KStatus = "InProgress" | "Failed" | "Current" | "Terminating" | "NotFound" | "Unknown";

export interface HealthResult {
  status: ArgoHealth;
  message?: string;
  error?: string;
}

export interface KStatusResult {
  status: KStatus;
  message: string;
  error?: string;
}

export interface RuleReport {
  group: string;
  alert?: string;
  record?: string;
  metrics: string[];
}

/** Builds (or finds in the cache) the gitops program and returns its path. */
export function buildGitopsTool(log: Log = stderrLog): Promise<string> {
  return buildModuleTool(
    gitopsModuleDir,
    "gitops",
    ["github.com/yuin/gopher-lua", "sigs.k8s.io/cli-utils", "github.com/prometheus/prometheus"],
    ({ dir }) => ({
      pkg: ".",
      ldflags: ["-s", "-w"],
      describe: `gitops: building gopher-lua, kstatus and the Prometheus rule parser into ${dir}`,
    }),
    log,
  );
}

async function run<T>(binary: string, args: string[], input?: unknown): Promise<T> {
  const child = exec(binary, args, { maxBuffer: 64 * 1024 * 1024 });
  if (input !== undefined) child.child.stdin?.end(JSON.stringify(input));
  const { stdout } = await child;
  return JSON.parse(stdout) as T;
}

/** Each object's health by the Lua script, run as Argo CD runs health checks. */
export function argoHealth(binary: string, scriptPath: string, objects: object[]): Promise<HealthResult[]> {
  return run(binary, ["health", scriptPath], objects);
}

/** Each object's status by kstatus. */
export function kstatus(binary: string, objects: object[]): Promise<KStatusResult[]> {
  return run(binary, ["kstatus"], objects);
}

/** A PrometheusRule validated by Prometheus's rule parser; the metric names each rule selects. */
export async function checkRules(binary: string, path: string): Promise<RuleReport[]> {
  return (await run<{ rules: RuleReport[] }>(binary, ["rules", path])).rules;
}

/** The metric names each PromQL expression selects, or why it does not parse. */
export function promqlMetrics(
  binary: string,
  exprs: string[],
): Promise<{ metrics: string[]; error?: string }[]> {
  return run(binary, ["promql"], exprs);
}
