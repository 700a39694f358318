// Renders what a user would apply: `kubectl kustomize deploy/...` and
// `helm template` of the chart, parsed into plain objects for the deploy tests.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";
import { buildControlPlane } from "../../tools/sandbox/controlplane.ts";
import { buildHelm } from "../support/helm.ts";

const exec = promisify(execFile);

export const repoRoot = resolve(import.meta.dirname, "..", "..");
export const chartDir = join(repoRoot, "deploy", "helm", "neon-cloud-operator");

/** The release the chart is rendered as, so its names match deploy/base's. */
export const release = { name: "neon-cloud-operator", namespace: "neon-cloud-operator" };

/**
 * Rendered objects are read loosely; their shapes are checked by the API
 * server (apply.kube.test.ts) and by the assertions that read them.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Loose = any;

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [field: string]: Loose;
}

export interface Tools {
  helm: string;
  kubectl: string;
}

let helm: Promise<string> | undefined;
let kubectl: Promise<string> | undefined;

/** kubectl (for `kubectl kustomize`), built with the control plane on first use, then cached. */
export function kubectlBinary(): Promise<string> {
  kubectl ??= buildControlPlane().then((binaries) => binaries.kubectl);
  return kubectl;
}

/** helm, built from the Go module proxy on first use, then cached. */
export function helmBinary(): Promise<string> {
  helm ??= buildHelm();
  return helm;
}

/** Both tools; the first build takes minutes, later runs a second. */
export async function deployTools(): Promise<Tools> {
  return { helm: await helmBinary(), kubectl: await kubectlBinary() };
}

/** Time for a first build of helm and kubectl; later runs take a second. */
export const toolsTimeoutMs = 15 * 60_000;

async function run(cmd: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await exec(cmd, args, { cwd: repoRoot, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (err) {
    const { stdout = "", stderr = "" } = err as { stdout?: string; stderr?: string };
    throw new Error(`${cmd} ${args.join(" ")} failed:\n${stderr}${stdout}`, { cause: err });
  }
}

export function parseManifests(text: string): Manifest[] {
  return parseAllDocuments(text)
    .map((doc) => doc.toJS() as Manifest | null)
    .filter((m): m is Manifest => m !== null && typeof m === "object");
}

/** `kubectl kustomize <dir>`, dir relative to the repository root. */
export async function kustomize(dir: string): Promise<Manifest[]> {
  return parseManifests(await run(await kubectlBinary(), ["kustomize", join(repoRoot, dir)]));
}

export interface Overlay {
  resources?: string[];
  components?: string[];
  namespace?: string;
}

/**
 * Writes a throwaway overlay over deploy/ folders (paths relative to the
 * repository), as a user's own overlay would be, and hands its folder to `use`.
 * It lives under .tmp/ because kustomize only accepts relative paths.
 */
export async function withOverlay<T>(overlay: Overlay, use: (dir: string) => Promise<T>): Promise<T> {
  const dir = join(repoRoot, ".tmp", `overlay-${randomBytes(4).toString("hex")}`);
  await mkdir(dir, { recursive: true });
  try {
    const rel = (p: string) => relative(dir, join(repoRoot, p));
    const lines = ["apiVersion: kustomize.config.k8s.io/v1beta1", "kind: Kustomization"];
    if (overlay.namespace) lines.push(`namespace: ${overlay.namespace}`);
    lines.push(`resources: ${JSON.stringify((overlay.resources ?? []).map(rel))}`);
    lines.push(`components: ${JSON.stringify((overlay.components ?? []).map(rel))}`);
    await writeFile(join(dir, "kustomization.yaml"), `${lines.join("\n")}\n`);
    return await use(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export function kustomizeOverlay(overlay: Overlay): Promise<Manifest[]> {
  return withOverlay(overlay, (dir) => kustomize(relative(repoRoot, dir)));
}

/** `helm template` output as text, for piping into kubectl. */
export async function helmTemplateText(
  set: Record<string, string> = {},
  releaseName: string = release.name,
  namespace: string = release.namespace,
): Promise<string> {
  const args = ["template", releaseName, chartDir, "--namespace", namespace];
  for (const [key, value] of Object.entries(set)) args.push("--set", `${key}=${value}`);
  return run(await helmBinary(), args);
}

/** `helm template` of the chart (as the release above unless named), with `--set`-style values. */
export async function helmTemplate(
  set: Record<string, string> = {},
  releaseName: string = release.name,
): Promise<Manifest[]> {
  return parseManifests(await helmTemplateText(set, releaseName));
}

/** `helm lint --strict`; resolves with helm's output, rejects with it when linting fails. */
export async function helmLint(set: Record<string, string> = {}): Promise<string> {
  const args = ["lint", "--strict", chartDir, "--namespace", release.namespace];
  for (const [key, value] of Object.entries(set)) args.push("--set", `${key}=${value}`);
  return run(await helmBinary(), args);
}

export function findAll(manifests: Manifest[], kind: string): Manifest[] {
  return manifests.filter((m) => m.kind === kind);
}

export function find(manifests: Manifest[], kind: string, name?: string): Manifest {
  const found = manifests.find((m) => m.kind === kind && (name === undefined || m.metadata.name === name));
  if (!found) throw new Error(`no ${kind}${name ? ` ${name}` : ""} in the rendered manifests`);
  return found;
}

export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
}

/**
 * A rule list as the set of single grants it allows ("group resource verb",
 * plus the object name when restricted), so two lists written differently
 * compare equal when they allow the same.
 */
export function grants(rules: PolicyRule[]): string[] {
  const out = new Set<string>();
  for (const rule of rules) {
    for (const group of rule.apiGroups ?? [""]) {
      for (const resource of rule.resources ?? []) {
        for (const verb of rule.verbs) {
          const names = rule.resourceNames?.length ? rule.resourceNames : [undefined];
          for (const name of names) {
            out.add(`${group || "core"} ${resource} ${verb}${name ? ` ${name}` : ""}`);
          }
        }
      }
    }
  }
  return [...out].sort();
}

export interface Subject {
  kind: string;
  name: string;
  namespace?: string;
}

/**
 * What a ServiceAccount may do, as RBAC decides it from the rendered roles and bindings: the
 * grants of its ClusterRoleBindings under "cluster", those of its RoleBindings under their
 * namespace (a RoleBinding of a ClusterRole grants its rules in that namespace only).
 */
export function effectiveGrants(manifests: Manifest[], account: { namespace: string; name: string }) {
  const out: Record<string, Set<string>> = {};
  const isAccount = (s: Subject) =>
    s.kind === "ServiceAccount" && s.name === account.name && s.namespace === account.namespace;
  for (const binding of manifests.filter((m) => ["ClusterRoleBinding", "RoleBinding"].includes(m.kind))) {
    if (!(binding.subjects as Subject[] | undefined)?.some(isAccount)) continue;
    const scope = binding.kind === "ClusterRoleBinding" ? "cluster" : binding.metadata.namespace!;
    const role = manifests.find(
      (m) =>
        m.kind === binding.roleRef.kind &&
        m.metadata.name === binding.roleRef.name &&
        (m.kind === "ClusterRole" || m.metadata.namespace === binding.metadata.namespace),
    );
    if (!role)
      throw new Error(`${binding.kind} ${binding.metadata.name} names a missing ${binding.roleRef.kind}`);
    out[scope] ??= new Set();
    for (const grant of grants(role.rules)) out[scope].add(grant);
  }
  return Object.fromEntries(Object.entries(out).map(([scope, set]) => [scope, [...set].sort()]));
}

/**
 * deploy/namespaced as docs/install.md installs it in `team-a`: deploy/cluster, the cluster
 * administrator's bindings (the `kubectl create ...binding` commands of the step
 * namespaced-admin, rendered by a client-side dry run) and the team's overlay.
 */
export async function namespacedInstall(adminScript: string, namespace = "team-a"): Promise<Manifest[]> {
  const kubectl = await kubectlBinary();
  const bindings: Manifest[] = [];
  const lines = adminScript.replace(/\\\n\s*/g, " ").split("\n");
  const assignments = lines.filter((l) => /^[A-Z_]+=/.test(l.trim()));
  for (const line of lines.filter((l) => /^kubectl .*create (cluster)?rolebinding /.test(l.trim()))) {
    const script = [...assignments, `${line.trim()} --dry-run=client -o yaml`].join("\n");
    const env = { ...process.env, KUBECONFIG: "/dev/null", PATH: `${dirname(kubectl)}:${process.env.PATH}` };
    const { stdout } = await exec("bash", ["-euo", "pipefail", "-c", script], { env });
    bindings.push(...parseManifests(stdout));
  }
  if (bindings.some((b) => b.subjects?.[0]?.namespace !== namespace))
    throw new Error(`the administrator's bindings of docs/install.md are not for ${namespace}`);
  return [
    ...(await kustomize("deploy/cluster")),
    ...bindings,
    ...(await kustomizeOverlay({ resources: ["deploy/namespaced"], namespace })),
  ];
}
