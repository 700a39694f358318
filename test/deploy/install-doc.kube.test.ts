// docs/install.md, run as written: its `sh` steps (tagged `step:<name>`) go through bash from a
// directory holding deploy/ and samples/, with kubectl and helm on PATH, against a real API server
// of this file's own (the flows delete CRDs, which the shared server's other tests need). The
// operator runs as the installed Deployment would, minus the pod: `node src/cli.ts` with the
// container's args and environment, as the Deployment's ServiceAccount (a token from the
// TokenRequest API), against the emulator. So "Ready" in the docs' verify step, the Lease it looks
// for and the finalizers the uninstall waits on are the operator's real work, under the installed
// RBAC. There is no node: the commands that need a running pod are replaced by a check of what they
// name (needsAPod below, each with why); npm run e2e:node runs them in pods.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { freePort } from "../../scripts/image/host.ts";
import { PlatformClient } from "../../src/platform/index.ts";
import { loadSeedFile, startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import { startControlPlane, type ControlPlane } from "../../tools/sandbox/controlplane.ts";
import { eventually } from "../support/kube.ts";
import { commands, installDocSteps, type DocStep } from "./install-doc.ts";
import { helmBinary, repoRoot, toolsTimeoutMs, type Loose } from "./render.ts";

const exec = promisify(execFile);

/**
 * Commands that need a running pod, and what runs instead: a check, on the API server, that what
 * they name exists (the node suite, npm run e2e:node, runs the pods).
 */
const needsAPod: { pattern: RegExp; instead: string; why: string }[] = [
  {
    pattern: /^(kubectl .*?)rollout status (\S+).*$/m,
    instead: "$1get $2",
    why: "waits until the Deployment's pods are Ready: the Deployment must exist",
  },
  {
    pattern: /^(kubectl .*?)logs (\S+).*$/m,
    instead: "$1get $2",
    why: "reads a pod's log: the Deployment must exist",
  },
  {
    pattern: /^(kubectl .*?)port-forward (\S+) (\d+) &$/m,
    instead: "$1get $2 -o jsonpath='{.spec.ports[*].port}' | grep -qw $3",
    why: "forwards a port to a pod: the Service must serve that port",
  },
  {
    pattern: /^curl .*\$\((kubectl [^)]*)\).*$/m,
    instead: "$1 >/dev/null",
    why: "scrapes /metrics through the port-forward: the scraper's token must be issued (the operator's HTTPS /metrics and its reviews are test/operator/rbac.kube.test.ts's)",
  },
  { pattern: /^kill %1$/m, instead: "true", why: "stops the port-forward" },
];

/** Steps no flow runs, and why. */
const notRun: Record<string, string> = {
  image: "builds and pushes an image with docker (no engine here; npm run e2e builds it with podman)",
  "image-podman": "builds and pushes an image (npm run e2e builds it, test/e2e/image.e2e.ts)",
  outside: "runs the operator in the foreground, as this test does for every flow",
};

/** A step's longest run: a wait in the docs allows minutes, which no step here needs. */
const stepTimeoutMs = 60_000;
/** A whole flow: its steps, the operator's start, namespaces deleted. */
const flowTimeoutMs = 300_000;

let steps: Map<string, DocStep>;
let controlPlane: ControlPlane;
let emulator: Emulator;
let platform: PlatformClient;
let work: string;
/** The test's own files (kubectl, helm, HOME, kubeconfigs), kept out of the reader's tree. */
let own: string;
let env: NodeJS.ProcessEnv;
let operator: LocalOperator | undefined;
/** Everything the steps and the operator printed, for "no key in any output". */
const output: string[] = [];

beforeAll(async () => {
  steps = await installDocSteps();
  const helm = await helmBinary();
  await mkdir(join(repoRoot, ".tmp"), { recursive: true });
  controlPlane = await startControlPlane({ logFile: join(repoRoot, ".tmp", "install-doc-controlplane.log") });
  emulator = await startEmulator({
    seed: await loadSeedFile(join(repoRoot, "tools", "emulator", "seeds", "demo.yaml")),
    rateLimits: false,
    operationDurationMs: 100,
  });
  platform = new PlatformClient({ baseUrl: emulator.url, apiKey: emulator.bootstrapKey });
  // The reader's repository root, as far as the docs use it: a git work tree with the
  // repository's .gitignore, so a step that leaves a file behind shows in `git status`.
  work = await mkdtemp(join(tmpdir(), "neon-install-doc-"));
  for (const dir of ["deploy", "samples"]) await symlink(join(repoRoot, dir), join(work, dir));
  await copyFile(join(repoRoot, ".gitignore"), join(work, ".gitignore"));
  const git = (...args: string[]) =>
    exec("git", ["-c", "user.name=docs", "-c", "user.email=docs@example.com", ...args], { cwd: work });
  await git("init", "-q");
  await git("add", "-A");
  await git("commit", "-q", "-m", "the reader's checkout");
  own = await mkdtemp(join(tmpdir(), "neon-install-doc-own-"));
  const bin = join(own, "bin");
  await mkdir(bin);
  await symlink(controlPlane.binaries.kubectl, join(bin, "kubectl"));
  await symlink(helm, join(bin, "helm"));
  env = {
    PATH: `${bin}:${process.env.PATH}`,
    HOME: own,
    KUBECONFIG: controlPlane.kubeconfig,
    NEON_API_KEY: emulator.bootstrapKey,
  };
}, toolsTimeoutMs);

afterAll(async () => {
  await operator?.stop();
  await platform?.close();
  await emulator?.close();
  await controlPlane?.stop();
  if (work) await rm(work, { recursive: true, force: true });
  if (own) await rm(own, { recursive: true, force: true });
});

/** Runs a step of docs/install.md with bash (-e, -u, pipefail), `placeholders` filled in; rejects with its output. */
async function run(name: string, placeholders: Record<string, string> = {}): Promise<string> {
  const step = steps.get(name);
  if (!step) throw new Error(`docs/install.md has no step ${name}`);
  let script = step.script.replace(/\\\n\s*/g, " ");
  for (const { pattern, instead } of needsAPod) script = script.replace(new RegExp(pattern, "gm"), instead);
  for (const [placeholder, value] of Object.entries(placeholders))
    script = script.replaceAll(placeholder, value);
  const left = /<[a-z][a-z -]*>/.exec(script.replace(/<<'?EOF'?/g, ""));
  if (left) throw new Error(`step ${name} has a placeholder the test does not fill: ${left[0]}`);
  try {
    // Within the test's time, so a step that hangs fails with its output (and the operator's).
    const { stdout, stderr } = await exec("bash", ["-euo", "pipefail", "-c", script], {
      cwd: work,
      env,
      timeout: stepTimeoutMs,
    });
    output.push(stdout, stderr);
    return stdout;
  } catch (err) {
    const { stdout = "", stderr = "" } = err as { stdout?: string; stderr?: string };
    output.push(stdout, stderr);
    throw new Error(`step ${name} (docs/install.md:${step.line}) failed:\n${stderr}${stdout}`, {
      cause: err,
    });
  }
}

const kubectl = async (...args: string[]) =>
  (await exec(controlPlane.binaries.kubectl, args, { env: { ...env } })).stdout;

/** The operator as a Deployment runs it, in a process of its own. */
interface LocalOperator {
  stop(): Promise<void>;
  /** Its last lines, for a failing step's message. */
  tail(): string;
}

/**
 * Starts `node src/cli.ts` with the installed Deployment's args and environment (fieldRefs
 * resolved as the kubelet would), as its ServiceAccount. What differs from a pod: the platform is
 * the emulator, the listen addresses are free loopback ports, operations are polled every 200 ms.
 */
async function startFromDeployment(namespace: string): Promise<LocalOperator> {
  const deployment = JSON.parse(
    await kubectl("-n", namespace, "get", "deployment", "neon-cloud-operator", "-o", "json"),
  );
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0];
  const podName = `neon-cloud-operator-doc-${process.pid}`;
  const fields: Record<string, string> = { "metadata.namespace": namespace, "metadata.name": podName };
  const variables: Record<string, string> = {};
  for (const e of container.env as Loose[]) {
    const value = e.value ?? fields[e.valueFrom?.fieldRef?.fieldPath];
    if (value === undefined) throw new Error(`the test cannot resolve ${JSON.stringify(e)}`);
    variables[e.name] = value;
  }
  const probes = await freePort();
  Object.assign(variables, {
    NEON_OPERATOR_PLATFORM_BASE_URL: emulator.url,
    NEON_OPERATOR_METRICS_ADDRESS: `127.0.0.1:${probes}`,
    NEON_OPERATOR_METRICS_SECURE_ADDRESS: `127.0.0.1:${await freePort()}`,
    NEON_OPERATOR_POLL_INTERVAL: "200ms",
  });
  // The ServiceAccount's token, as the kubelet would mount it.
  const token = (await kubectl("-n", namespace, "create", "token", pod.serviceAccountName)).trim();
  const admin = new KubeConfig();
  admin.loadFromFile(controlPlane.kubeconfig);
  const cluster = admin.getCurrentCluster()!;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ ...cluster, name: "cluster" }],
    users: [{ name: "operator", token }],
    contexts: [{ name: "operator", cluster: "cluster", user: "operator" }],
    currentContext: "operator",
  });
  const kubeconfig = join(own, `${namespace}-operator.kubeconfig`);
  await writeFile(kubeconfig, kc.exportConfig(), { mode: 0o600 });

  const child: ChildProcess = spawn(
    process.execPath,
    [join(repoRoot, "src", "cli.ts"), ...(container.args as string[])],
    {
      cwd: repoRoot,
      env: { PATH: process.env.PATH, HOME: own, KUBECONFIG: kubeconfig, ...variables },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const lines: string[] = [];
  for (const stream of [child.stdout, child.stderr])
    if (stream) createInterface({ input: stream }).on("line", (line) => lines.push(line));
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
    output.push(...lines);
  };
  try {
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`the operator exited:\n${lines.slice(-20).join("\n")}`);
        return (await fetch(`http://127.0.0.1:${probes}/readyz`)).status === 200 ? true : undefined;
      },
      { what: `the operator of ${namespace} Ready`, timeoutMs: 60_000, intervalMs: 200 },
    );
  } catch (err) {
    await stop();
    throw new Error(`${String(err)}\n${lines.slice(-20).join("\n")}`, { cause: err });
  }
  return { stop, tail: () => lines.slice(-20).join("\n") };
}

async function startOperator(namespace: string) {
  operator = await startFromDeployment(namespace);
}

async function stopOperator() {
  await operator?.stop();
  operator = undefined;
}

const endpointsOnPlatform = async () => (await platform.listEndpoints("demo-shop")).map((e) => e.id).sort();

/** The API key, an install step, the operator started, then the grant, verify, try, metrics and upgrade steps. */
async function installAndVerify(install: string, upgrade: string): Promise<void> {
  await run("api-key");
  await run(install);
  await startOperator("neon-cloud-operator");
  for (const step of ["grant", "verify", "try", "metrics", upgrade]) await run(step);
}

describe("docs/install.md", () => {
  test("every sh block is a step this test runs, or says why not", () => {
    const ran = new Set([
      ...["api-key", "install-kustomize", "install-helm", "verify", "try", "metrics"],
      ...["namespaced-admin", "namespaced-install", "namespaced-verify"],
      ...["upgrade-kustomize", "upgrade-namespaced", "upgrade-helm"],
      ...["uninstall-resources", "uninstall-kustomize", "uninstall-helm", "uninstall-crds"],
      ...["namespaced-uninstall-resources", "namespaced-uninstall", "uninstall-cluster", "remove-finalizers"],
      "grant",
    ]);
    expect([...steps.keys()].filter((s) => !ran.has(s) && !(s in notRun))).toEqual([]);
  });

  test("the verify step names every kind of crds/, the uninstall steps every namespaced one, so no finalizer is left hanging", async () => {
    const files = (await readdir(join(repoRoot, "crds"))).sort();
    const plurals = files.map((f) => f.replace(/\.yaml$/, ""));
    // Cluster-scoped kinds (CredentialsGrant) carry no finalizer and are the administrator's.
    const namespaced: string[] = [];
    for (const f of files)
      if (/^\s*scope: Namespaced$/m.test(await readFile(join(repoRoot, "crds", f), "utf8")))
        namespaced.push(f.replace(/\.yaml$/, ""));
    const named = (step: string, pattern: RegExp) =>
      commands(steps.get(step)!.script)
        .map((c) => pattern.exec(c)?.[1])
        .filter((x) => x !== undefined)
        .flatMap((list) => list.split(/[\s,]+/).filter(Boolean))
        .map((name) => name.replace(/\.neoncloud\.dev$/, ""))
        .sort();
    expect(named("verify", /^kubectl get crd (.*)$/)).toEqual(plurals);
    expect(named("uninstall-resources", /^kubectl delete (\S+) --all/)).toEqual(namespaced);
    expect(named("namespaced-uninstall-resources", /^kubectl -n \S+ delete (\S+) --all/)).toEqual(namespaced);
  });

  test(
    "with kustomize: install, verify, upgrade and uninstall, and the platform is as before",
    async () => {
      const before = await endpointsOnPlatform();
      await installAndVerify("install-kustomize", "upgrade-kustomize");
      expect((await endpointsOnPlatform()).length).toBe(before.length + 1);
      await run("uninstall-resources");
      expect(await endpointsOnPlatform()).toEqual(before);
      await stopOperator();
      await run("uninstall-kustomize");
      expect(await kubectl("get", "crd", "-o", "name")).toBe("");
      expect(await kubectl("get", "namespaces", "-o", "name")).not.toContain("namespace/neon-cloud-operator");
    },
    flowTimeoutMs,
  );

  test(
    "with Helm: install, verify, upgrade, a stuck resource let go by hand, and uninstall",
    async () => {
      const before = await endpointsOnPlatform();
      await installAndVerify("install-helm", "upgrade-helm");
      await run("uninstall-resources");
      expect(await endpointsOnPlatform()).toEqual(before);

      // The operator removed while a resource exists: its finalizer holds it, until removed by hand.
      await run("try");
      await stopOperator();
      await run("uninstall-helm");
      await kubectl("-n", "default", "delete", "computeendpoint", "shop-dev", "--wait=false");
      expect(await kubectl("-n", "default", "get", "computeendpoint", "shop-dev", "-o", "name")).toContain(
        "shop-dev",
      );
      await run("remove-finalizers", { "<name>": "shop-dev", "<namespace>": "default" });
      await eventually(
        async () =>
          (await kubectl("-n", "default", "get", "computeendpoints", "-o", "name")).trim() === ""
            ? true
            : undefined,
        { what: "the stuck ComputeEndpoint gone once its finalizer was removed" },
      );
      // Helm kept the CRDs (crds.keep), as the docs say; then they go by hand.
      expect(await kubectl("get", "crd", "-o", "name")).toContain("computeendpoints.neoncloud.dev");
      await run("uninstall-crds");
      expect(await kubectl("get", "crd", "-o", "name")).toBe("");
      // The endpoint let go of stays on the platform, as the docs warn; its owner deletes it there.
      const left = (await endpointsOnPlatform()).filter((id) => !before.includes(id));
      expect(left).toHaveLength(1);
      await platform.deleteEndpoint("demo-shop", left[0]!);
    },
    flowTimeoutMs,
  );

  test(
    "one namespace: the administrator's part, the team's part, verify, upgrade and uninstall",
    async () => {
      await run("namespaced-admin");
      await run("namespaced-install");
      await startOperator("team-a");
      // Nothing cluster-wide is the team's: its operator holds no ClusterRoleBinding but the administrator's two.
      const bindings = (await kubectl("get", "clusterrolebindings", "-o", "name")).split("\n");
      expect(bindings.filter((b) => b.includes("neon-cloud-operator")).sort()).toEqual([
        "clusterrolebinding.rbac.authorization.k8s.io/neon-cloud-operator-grants-team-a",
        "clusterrolebinding.rbac.authorization.k8s.io/neon-cloud-operator-metrics-auth-team-a",
      ]);
      for (const step of ["namespaced-verify", "upgrade-namespaced"]) await run(step);
      const before = await endpointsOnPlatform();
      await run("namespaced-uninstall-resources");
      expect((await endpointsOnPlatform()).length).toBe(before.length - 1);
      await stopOperator();
      await run("namespaced-uninstall");
      expect(
        await kubectl("-n", "team-a", "get", "deployments,roles,rolebindings,secrets", "-o", "name"),
      ).toBe("");
      await run("uninstall-cluster");
      expect(await kubectl("get", "crd", "-o", "name")).toBe("");
    },
    flowTimeoutMs,
  );

  test("the steps leave the reader's checkout as it was, but for what git ignores", async () => {
    const { stdout } = await exec("git", ["status", "--porcelain", "--untracked-files=all"], { cwd: work });
    expect(stdout).toBe("");
  });

  test("no step and no operator line printed the API key", () => {
    expect(output.join("\n")).not.toContain(emulator.bootstrapKey);
  });
});
