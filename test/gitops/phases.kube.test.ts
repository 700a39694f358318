// Argo CD and Flux judge our resources with their own code: the real operator
// and the emulator drive a ComputeEndpoint, an ApiKey, a Branch, a Project and a Snapshot through each
// lifecycle phase, each phase is captured from the real API server, and Argo CD's Lua
// engine (with deploy/argocd/health.lua) and kstatus read the captured objects.
// The same running operator is scraped for its metrics (which the alerts and the
// dashboard in deploy/ must name correctly) and its logs are read.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startOperator, type RunningOperator } from "../../src/operator.ts";
import { loadConfig } from "../../src/config.ts";
import type { KubeObject } from "../../src/runtime/index.ts";
import { kinds } from "../../src/api/index.ts";
import { startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import {
  argoHealth,
  buildGitopsTool,
  checkRules,
  kstatus,
  promqlMetrics,
  repoRoot,
} from "../support/gitops.ts";
import { applyCredentialsSecret } from "../support/credentials.ts";
import { adminKubeConfig, createNamespace, eventually, kubectl } from "../support/kube.ts";
import { LogCapture, testSeed } from "../support/operator.ts";
import { parseExposition, type Exposition } from "./exposition.ts";
import type { Expectation, Phase } from "./phases.ts";

type Kind = Expectation["kind"];
interface Condition {
  type: string;
  status: string;
  reason: string;
}
type Resource = KubeObject & {
  metadata: { managedFields?: { manager: string; operation: string; subresource?: string }[] };
  spec?: Record<string, unknown>;
  status?: { observedGeneration?: number; conditions?: Condition[]; keyFingerprint?: string };
};

/** Only the status the CRD defaults (`{observedGeneration: 0}`): the operator has not written yet. */
function notWrittenYet(o: Resource): boolean {
  return o.status?.observedGeneration === 0 && (o.status.conditions ?? []).length === 0;
}

const healthScript = join(repoRoot, "deploy", "argocd", "health.lua");
/** A Branch's create holds the project's lock for a few seconds, behind the endpoints' creates. */
const branchTimeoutMs = 60_000;
/** Holds a deleted object in its deleting phase after the operator's own cleanup. */
const holdFinalizer = "test.neoncloud.dev/hold";
/** The captured objects by "kind/phase", written for a look by hand: one file per run (its namespace). */
const capturedDir = join(repoRoot, ".tmp", "gitops-phases");

let tool: string;
let emulator: Emulator;
let operator: RunningOperator | undefined;
let namespace: string;
let metrics: Exposition;
const logs = new LogCapture();
const captured = new Map<string, Resource>();

const plurals: Record<Kind, string> = {
  ComputeEndpoint: "computeendpoints",
  ApiKey: "apikeys",
  Branch: "branches",
  Project: "projects",
  Snapshot: "snapshots",
};
const plural = (kind: Kind) => plurals[kind];

async function get(kind: Kind, name: string, ...flags: string[]): Promise<Resource> {
  return JSON.parse(
    await kubectl(["get", plural(kind), name, "-n", namespace, "-o", "json", ...flags]),
  ) as Resource;
}

async function apply(kind: Kind, name: string, spec: Record<string, unknown>): Promise<void> {
  const manifest = { apiVersion: "neoncloud.dev/v1alpha1", kind, metadata: { name }, spec };
  await kubectl(["apply", "-n", namespace, "-f", "-"], { input: JSON.stringify(manifest) });
}

function condition(obj: Resource, type: string): Condition | undefined {
  return obj.status?.conditions?.find((c) => c.type === type);
}

/** Waits until the live object is in the phase `test` recognises, and keeps that copy. */
async function capture(
  kind: Kind,
  phase: Phase,
  name: string,
  test: (obj: Resource) => boolean,
  timeoutMs = 30_000,
): Promise<Resource> {
  let last: Resource | undefined;
  const obj = await eventually(
    async () => {
      last = await get(kind, name);
      return test(last) ? last : undefined;
    },
    { timeoutMs, intervalMs: 100 },
  ).catch((err: unknown) => {
    const seen = JSON.stringify({
      metadata: { generation: last?.metadata.generation },
      status: last?.status,
    });
    throw new Error(`${kind} ${name} never reached phase "${phase}"; last seen: ${seen}`, { cause: err });
  });
  captured.set(`${kind}/${phase}`, obj);
  return obj;
}

/** kubectl with its exit code (diff exits 1 when there is a difference). */
function kubectlExit(
  args: string[],
  input: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      inject("kubectl"),
      args,
      { env: { ...process.env, KUBECONFIG: inject("kubeconfig") } },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    child.stdin?.end(input);
  });
}

const observed = (obj: Resource) => obj.status?.observedGeneration === obj.metadata.generation;
const readyIs = (status: string, reason?: string) => (obj: Resource) => {
  const ready = condition(obj, "Ready");
  return ready?.status === status && (reason === undefined || ready.reason === reason);
};

/** The id of proj-alpha's root branch, the one a snapshot may be taken of. */
async function rootBranch(): Promise<string> {
  const res = await fetch(`${emulator.url}/projects/proj-alpha/branches`, {
    headers: { authorization: `Bearer ${emulator.bootstrapKey}` },
  });
  const { branches } = (await res.json()) as { branches: { id: string; default: boolean }[] };
  return branches.find((b) => b.default)?.id ?? "";
}

async function start(): Promise<RunningOperator> {
  const config = loadConfig([
    `--platform-base-url=${emulator.url}`,
    `--default-credentials-secret=${namespace}/neon-api-key`,
    `--leader-election-namespace=${namespace}`,
    "--leader-election-id=gitops-proof",
    `--namespaces=${namespace}`,
    "--metrics-address=127.0.0.1:0",
    "--shutdown-deadline=2s",
  ]);
  const running = await startOperator(config, logs.logger, {
    kubeConfig: adminKubeConfig(),
    pollIntervalMs: 100,
  });
  await eventually(() => (running.manager.isActing ? true : undefined), { what: "leading" });
  return running;
}

beforeAll(async () => {
  tool = await buildGitopsTool();
  emulator = await startEmulator({
    rateLimits: false,
    // Creating lasts long enough to be seen; a config change runs until the test ends. The
    // platform's lock is project-wide, so that change runs in a project of its own.
    operationDurationMs: {
      start_compute: 3_000,
      suspend_compute: 500,
      apply_config: 600_000,
      create_branch: 3_000,
    },
    seed: {
      // A plan that keeps history for at most 6 h: a Project asking more is refused.
      limits: { plan: "launch", max_history_retention_seconds: 21_600 },
      projects: [
        ...testSeed.projects,
        {
          id: "proj-busy",
          name: "busy",
          primary_branch: "main",
          branches: [{ id: "br-busy", name: "busy" }],
        },
      ],
    },
  });
  namespace = await createNamespace("gitops");
  for (const [name, apiKey] of [
    ["neon-api-key", emulator.bootstrapKey],
    ["wrong-key", "not-a-key-the-platform-knows"],
  ] as const) {
    await applyCredentialsSecret(namespace, name, apiKey);
  }
}, 900_000);

afterAll(async () => {
  await operator?.stop();
  await emulator?.close();
  if (!namespace) return;
  // The operator is gone: let the objects it still holds go with the namespace.
  for (const kind of Object.values(plurals)) {
    const names = (await kubectl(["get", kind, "-n", namespace, "-o", "name"])).split("\n").filter(Boolean);
    for (const name of names)
      await kubectl([
        "patch",
        name,
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":null}}',
      ]);
  }
  await kubectl(["delete", "namespace", namespace, "--wait=false"]);
});

describe("lifecycle phases, captured live", () => {
  it("drives every kind through every phase with the real operator and the emulator", async () => {
    // Before any operator runs: objects with only the status the CRD defaults.
    await apply("ComputeEndpoint", "ready", { projectId: "proj-alpha", branchId: "br-dev" });
    await apply("ApiKey", "ready", {});
    await apply("Branch", "ready", { projectId: "proj-alpha" });
    await apply("Project", "ready", {});
    // A snapshot of the project's root branch.
    const main = await rootBranch();
    await apply("Snapshot", "ready", { projectId: "proj-alpha", branchId: main });
    await capture("ComputeEndpoint", "no status yet", "ready", notWrittenYet);
    await capture("ApiKey", "no status yet", "ready", notWrittenYet);
    await capture("Branch", "no status yet", "ready", notWrittenYet);
    await capture("Project", "no status yet", "ready", notWrittenYet);
    await capture("Snapshot", "no status yet", "ready", notWrittenYet);

    operator = await start();
    await apply("ComputeEndpoint", "creating", { projectId: "proj-alpha", branchId: "br-feature" });
    // Both creates last a few seconds on the platform; each is captured while it runs.
    await Promise.all([
      capture("ComputeEndpoint", "creating", "creating", readyIs("False", "Creating")),
      capture("Branch", "creating", "ready", readyIs("False", "Creating"), branchTimeoutMs),
      capture("Project", "creating", "ready", readyIs("False", "Creating")),
    ]);
    // On the branch still busy creating: its first attempt meets 423 Locked, and is retried.
    await apply("ComputeEndpoint", "suspended", {
      projectId: "proj-alpha",
      branchId: "br-feature",
      type: "read_only",
      suspended: true,
    });
    await apply("ComputeEndpoint", "running", { projectId: "proj-busy", branchId: "br-busy" });
    await capture("ComputeEndpoint", "ready", "ready", (o) => observed(o) && readyIs("True")(o));
    await capture("ApiKey", "ready", "ready", (o) => observed(o) && readyIs("True")(o));
    await capture("ComputeEndpoint", "suspended", "suspended", (o) => observed(o) && readyIs("True")(o));
    await capture("Branch", "ready", "ready", (o) => observed(o) && readyIs("True")(o), branchTimeoutMs);
    await capture("Project", "ready", "ready", (o) => observed(o) && readyIs("True")(o));

    // Branches: a parent Branch that does not exist (yet), an adopted id the project lacks, an
    // owner the branch has no role for (the platform's side of the spec), a TTL that runs out.
    await apply("Branch", "child", { projectId: "proj-alpha", parent: { branchRef: { name: "not-yet" } } });
    // WaitingForParent, or WaitingForReference where the managed layer names every reference wait.
    await capture("Branch", "waiting for parent", "child", (o) => {
      const ready = condition(o, "Ready");
      return ready?.status === "False" && ready.reason.startsWith("WaitingFor");
    });
    await apply("Branch", "adopt-missing", { projectId: "proj-alpha", branchId: "br-missing" });
    await capture("Branch", "unknown branch", "adopt-missing", readyIs("False", "BranchNotFound"));
    await apply("Branch", "invalid", {
      projectId: "proj-alpha",
      databases: [{ name: "shop", owner: "nobody" }],
    });
    await apply("Branch", "expiring", { projectId: "proj-alpha", ttl: "8s" });
    await capture("Branch", "invalid spec", "invalid", readyIs("False", "InvalidSpec"), branchTimeoutMs);
    await capture("Branch", "expired", "expiring", readyIs("False", "Expired"), branchTimeoutMs);

    // A config change whose operation runs on.
    await eventually(async () =>
      readyIs("True")(await get("ComputeEndpoint", "running")) ? true : undefined,
    );
    await apply("ComputeEndpoint", "running", {
      projectId: "proj-busy",
      branchId: "br-busy",
      autosuspend: "10m",
    });
    await capture(
      "ComputeEndpoint",
      "operations running",
      "running",
      (o) => observed(o) && condition(o, "Reconciling")?.status === "True",
    );

    // The platform refuses the spec (400), once per kind.
    emulator.faults.set({
      requests: [{ method: "POST", route: "/projects/:project_id/endpoints", status: 400, times: 1 }],
    });
    await apply("ComputeEndpoint", "invalid", {
      projectId: "proj-alpha",
      branchId: "br-dev",
      type: "read_only",
    });
    await capture("ComputeEndpoint", "invalid spec", "invalid", readyIs("False", "InvalidSpec"));
    emulator.faults.set({ requests: [{ method: "POST", route: "/api_keys", status: 400, times: 1 }] });
    await apply("ApiKey", "invalid", {});
    await capture("ApiKey", "invalid spec", "invalid", readyIs("False", "InvalidSpec"));
    emulator.faults.clear();
    // A retention above what the plan allows: the platform's 400 names the limit.
    await apply("Project", "invalid", { historyRetention: "720h" });
    await capture("Project", "invalid spec", "invalid", readyIs("False", "RetentionAboveLimit"));
    await apply("Project", "no-project", { projectId: "proj-missing" });
    await capture("Project", "unknown project", "no-project", readyIs("False", "ProjectNotFound"));

    await apply("ComputeEndpoint", "no-project", { projectId: "proj-missing", branchId: "br-dev" });
    await capture("ComputeEndpoint", "unknown project", "no-project", readyIs("False", "ProjectNotFound"));
    const wrongKey = { credentials: { secretName: "wrong-key" } };
    await apply("ComputeEndpoint", "unauthorized", {
      projectId: "proj-alpha",
      branchId: "br-dev",
      ...wrongKey,
    });
    await capture("ComputeEndpoint", "unauthorized", "unauthorized", readyIs("False", "Unauthorized"));
    await apply("ApiKey", "unauthorized", wrongKey);
    await capture("ApiKey", "unauthorized", "unauthorized", readyIs("False", "Unauthorized"));
    await apply("Branch", "unauthorized", { projectId: "proj-alpha", ...wrongKey });
    await capture("Branch", "unauthorized", "unauthorized", readyIs("False", "Unauthorized"));
    await apply("Project", "unauthorized", wrongKey);
    await capture("Project", "unauthorized", "unauthorized", readyIs("False", "Unauthorized"));

    await capture("Snapshot", "ready", "ready", (o) => observed(o) && readyIs("True")(o));
    // Snapshots are taken of root branches only: the platform refuses one of a child branch.
    await apply("Snapshot", "invalid", { projectId: "proj-alpha", branchId: "br-dev" });
    await capture("Snapshot", "invalid spec", "invalid", readyIs("False", "InvalidSpec"));
    await apply("Snapshot", "expiring", {
      projectId: "proj-alpha",
      branchId: main,
      expiresAt: new Date(Date.now() + 5_000).toISOString().replace(/\.\d+Z$/, "Z"),
    });
    await capture("Snapshot", "expired", "expiring", readyIs("False", "Expired"));
    await apply("Snapshot", "unauthorized", { projectId: "proj-alpha", branchId: main, ...wrongKey });
    await capture("Snapshot", "unauthorized", "unauthorized", readyIs("False", "Unauthorized"));

    // Scraped while operations run, so every family has samples to show its labels.
    const text = await (await fetch(`${operator.manager.serverUrl}/metrics`)).text();
    metrics = parseExposition(text);
  }, 600_000);

  it("keeps kubectl diff clean, and lets a GitOps tool and a person share an object by server-side apply", async () => {
    const manifest = {
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "ComputeEndpoint",
      metadata: { name: "shared" },
      spec: {
        projectId: "proj-alpha",
        branchId: "br-dev",
        type: "read_only",
        computeUnits: { min: 0.5, max: 1 },
      },
    };
    const gitops = ["--server-side", "--field-manager=argocd-controller", "-n", namespace, "-f", "-"];
    await kubectl(["apply", ...gitops], { input: JSON.stringify(manifest) });
    await eventually(
      async () => {
        const live = await get("ComputeEndpoint", "shared");
        return observed(live) && readyIs("True")(live) ? live : undefined;
      },
      { what: "shared Ready", timeoutMs: 30_000 },
    );
    // Defaults filled in by the API server and everything the operator wrote: no diff.
    const diff = await kubectlExit(["diff", ...gitops], JSON.stringify(manifest));
    expect(diff, "kubectl diff after reconcile").toMatchObject({ code: 0, stdout: "" });

    // The operator's writes are credited to it, not to its HTTP library.
    const live = await get("ComputeEndpoint", "shared", "--show-managed-fields");
    const managers = (live.metadata.managedFields ?? []).map(
      (f) => `${f.manager}/${f.operation}/${f.subresource ?? ""}`,
    );
    expect(managers).toEqual(
      expect.arrayContaining([
        "argocd-controller/Apply/",
        "neon-cloud-operator/Update/status",
        "neon-cloud-operator/Update/",
      ]),
    );
    expect(managers).toHaveLength(3);

    // A person adds what the GitOps tool does not manage; a field it does manage is refused.
    const person = ["--server-side", "--field-manager=alice", "-n", namespace, "-f", "-"];
    const annotation = {
      ...manifest,
      metadata: { name: "shared", annotations: { "neoncloud.dev/observeInterval": "30s" } },
      spec: undefined,
    };
    await kubectl(["apply", ...person], { input: JSON.stringify(annotation) });
    const resize = { ...manifest, spec: { ...manifest.spec, computeUnits: { min: 1, max: 1 } } };
    const refused = await kubectlExit(["apply", ...person], JSON.stringify(resize));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/conflict/i);
    expect(refused.stderr).toContain("argocd-controller");
    const after = await kubectlExit(["diff", ...gitops], JSON.stringify(manifest));
    expect(after, "the person's annotation is no drift for the GitOps tool").toMatchObject({
      code: 0,
      stdout: "",
    });
  });

  it("captures a spec change the operator has not seen yet, and a deletion", async () => {
    if (!operator) throw new Error("the operator did not start");
    await operator.stop();
    operator = undefined;
    await apply("ComputeEndpoint", "ready", {
      projectId: "proj-alpha",
      branchId: "br-dev",
      autosuspend: "1h",
    });
    await apply("ApiKey", "ready", { rotation: { interval: "720h" } });
    await apply("Branch", "ready", { projectId: "proj-alpha", protected: false });
    await apply("Project", "ready", { historyRetention: "2h" });
    await apply("Snapshot", "ready", {
      projectId: "proj-alpha",
      branchId: await rootBranch(),
      name: "renamed",
    });
    for (const kind of ["ComputeEndpoint", "ApiKey", "Branch", "Project", "Snapshot"] as const) {
      await capture(kind, "spec changed, not yet observed", "ready", (o) => !observed(o));
      await kubectl([
        "patch",
        plural(kind),
        "ready",
        "-n",
        namespace,
        "--type=json",
        "-p",
        JSON.stringify([{ op: "add", path: "/metadata/finalizers/-", value: holdFinalizer }]),
      ]);
      await kubectl(["delete", plural(kind), "ready", "-n", namespace, "--wait=false"]);
      await capture(kind, "deleting", "ready", (o) => o.metadata.deletionTimestamp !== undefined);
    }
    // Kept for a look with the tools by hand: `gitops kstatus < file`.
    await mkdir(capturedDir, { recursive: true });
    const file = join(capturedDir, `${namespace}.json`);
    await writeFile(file, JSON.stringify(Object.fromEntries(captured), null, 2));
  });
});

/** The health both tools report in each phase: what a user of Argo CD or Flux sees. */
const expectations: Expectation[] = [
  { kind: "ComputeEndpoint", phase: "no status yet", argo: "Progressing", kstatus: "InProgress" },
  { kind: "ComputeEndpoint", phase: "creating", argo: "Progressing", kstatus: "InProgress" },
  { kind: "ComputeEndpoint", phase: "operations running", argo: "Progressing", kstatus: "InProgress" },
  { kind: "ComputeEndpoint", phase: "ready", argo: "Healthy", kstatus: "Current" },
  { kind: "ComputeEndpoint", phase: "suspended", argo: "Suspended", kstatus: "Current" },
  { kind: "ComputeEndpoint", phase: "invalid spec", argo: "Degraded", kstatus: "Failed" },
  { kind: "ComputeEndpoint", phase: "unknown project", argo: "Degraded", kstatus: "Failed" },
  { kind: "ComputeEndpoint", phase: "unauthorized", argo: "Degraded", kstatus: "Failed" },
  {
    kind: "ComputeEndpoint",
    phase: "spec changed, not yet observed",
    argo: "Progressing",
    kstatus: "InProgress",
  },
  { kind: "ComputeEndpoint", phase: "deleting", argo: "Progressing", kstatus: "Terminating" },
  { kind: "ApiKey", phase: "no status yet", argo: "Progressing", kstatus: "InProgress" },
  { kind: "ApiKey", phase: "ready", argo: "Healthy", kstatus: "Current" },
  { kind: "ApiKey", phase: "invalid spec", argo: "Degraded", kstatus: "Failed" },
  { kind: "ApiKey", phase: "unauthorized", argo: "Degraded", kstatus: "Failed" },
  { kind: "ApiKey", phase: "spec changed, not yet observed", argo: "Progressing", kstatus: "InProgress" },
  { kind: "ApiKey", phase: "deleting", argo: "Progressing", kstatus: "Terminating" },
  { kind: "Branch", phase: "no status yet", argo: "Progressing", kstatus: "InProgress" },
  { kind: "Branch", phase: "creating", argo: "Progressing", kstatus: "InProgress" },
  { kind: "Branch", phase: "waiting for parent", argo: "Progressing", kstatus: "InProgress" },
  { kind: "Branch", phase: "ready", argo: "Healthy", kstatus: "Current" },
  { kind: "Branch", phase: "invalid spec", argo: "Degraded", kstatus: "Failed" },
  { kind: "Branch", phase: "unknown branch", argo: "Degraded", kstatus: "Failed" },
  { kind: "Branch", phase: "expired", argo: "Degraded", kstatus: "Failed" },
  { kind: "Branch", phase: "unauthorized", argo: "Degraded", kstatus: "Failed" },
  { kind: "Branch", phase: "spec changed, not yet observed", argo: "Progressing", kstatus: "InProgress" },
  { kind: "Branch", phase: "deleting", argo: "Progressing", kstatus: "Terminating" },
  { kind: "Project", phase: "no status yet", argo: "Progressing", kstatus: "InProgress" },
  { kind: "Project", phase: "creating", argo: "Progressing", kstatus: "InProgress" },
  { kind: "Project", phase: "ready", argo: "Healthy", kstatus: "Current" },
  { kind: "Project", phase: "invalid spec", argo: "Degraded", kstatus: "Failed" },
  { kind: "Project", phase: "unknown project", argo: "Degraded", kstatus: "Failed" },
  { kind: "Project", phase: "unauthorized", argo: "Degraded", kstatus: "Failed" },
  { kind: "Project", phase: "spec changed, not yet observed", argo: "Progressing", kstatus: "InProgress" },
  { kind: "Project", phase: "deleting", argo: "Progressing", kstatus: "Terminating" },
  { kind: "Snapshot", phase: "no status yet", argo: "Progressing", kstatus: "InProgress" },
  { kind: "Snapshot", phase: "ready", argo: "Healthy", kstatus: "Current" },
  { kind: "Snapshot", phase: "invalid spec", argo: "Degraded", kstatus: "Failed" },
  { kind: "Snapshot", phase: "expired", argo: "Degraded", kstatus: "Failed" },
  { kind: "Snapshot", phase: "unauthorized", argo: "Degraded", kstatus: "Failed" },
  { kind: "Snapshot", phase: "spec changed, not yet observed", argo: "Progressing", kstatus: "InProgress" },
  { kind: "Snapshot", phase: "deleting", argo: "Progressing", kstatus: "Terminating" },
];

function capturedFor(e: Expectation): Resource {
  const obj = captured.get(`${e.kind}/${e.phase}`);
  if (!obj) throw new Error(`no ${e.kind} was captured in phase "${e.phase}"`);
  return obj;
}

describe("Argo CD health (deploy/argocd/health.lua in gopher-lua, as Argo CD runs it)", () => {
  it("shows each phase as a user expects", async () => {
    const rows = expectations.filter((e) => e.argo);
    const results = await argoHealth(tool, healthScript, rows.map(capturedFor));
    const seen = rows.map((e, i) => ({ kind: e.kind, phase: e.phase, argo: results[i]?.status }));
    expect(seen).toEqual(rows.map((e) => ({ kind: e.kind, phase: e.phase, argo: e.argo })));
    for (const r of results) {
      expect(r.error).toBeUndefined();
      expect(r.message, "a health message says why").toBeTruthy();
    }
  });

  it("covers every kind the operator serves (argocd.test.ts: the same script is registered for each)", () => {
    expect(new Set(expectations.map((e) => e.kind))).toEqual(
      new Set(kinds.filter((k) => k.status).map((k) => k.kind)),
    );
  });
});

describe("Flux / kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status)", () => {
  it("computes each phase's status as a user expects", async () => {
    const rows = expectations.filter((e) => e.kstatus);
    const results = await kstatus(tool, rows.map(capturedFor));
    const seen = rows.map((e, i) => ({ kind: e.kind, phase: e.phase, kstatus: results[i]?.status }));
    expect(seen).toEqual(rows.map((e) => ({ kind: e.kind, phase: e.phase, kstatus: e.kstatus })));
  });
});

describe("metrics of the running operator", () => {
  const families: [name: string, type: string, labels: string[]][] = [
    ["controller_runtime_reconcile_total", "counter", ["controller", "result"]],
    ["controller_runtime_reconcile_errors_total", "counter", ["controller"]],
    ["controller_runtime_terminal_reconcile_errors_total", "counter", ["controller"]],
    ["controller_runtime_reconcile_time_seconds", "histogram", ["controller"]],
    ["controller_runtime_active_workers", "gauge", ["controller"]],
    ["controller_runtime_max_concurrent_reconciles", "gauge", ["controller"]],
    ["workqueue_depth", "gauge", ["controller", "name", "priority"]],
    ["workqueue_adds_total", "counter", ["controller", "name"]],
    ["workqueue_retries_total", "counter", ["controller", "name"]],
    ["workqueue_queue_duration_seconds", "histogram", ["controller", "name"]],
    ["workqueue_work_duration_seconds", "histogram", ["controller", "name"]],
    ["workqueue_longest_running_processor_seconds", "gauge", ["controller", "name"]],
    ["workqueue_unfinished_work_seconds", "gauge", ["controller", "name"]],
    ["leader_election_master_status", "gauge", ["name"]],
    ["neon_cloud_operator_platform_requests_total", "counter", ["method", "route", "status"]],
    ["neon_cloud_operator_platform_request_duration_seconds", "histogram", ["method", "route"]],
    ["neon_cloud_operator_platform_budget_wait_seconds", "histogram", ["route"]],
    ["neon_cloud_operator_platform_operations_in_flight", "gauge", ["action"]],
    ["neon_cloud_operator_informer_lists_total", "counter", ["resource"]],
    ["neon_cloud_operator_build_info", "gauge", ["node_version", "version"]],
  ];

  it.each(families)("exposes %s as a %s labelled by %j", (name, type, labels) => {
    expect(metrics.types.get(name)).toBe(type);
    const samples = metrics.samples.filter((s) => s.family === name);
    expect(samples.length, `${name} has samples`).toBeGreaterThan(0);
    for (const s of samples)
      expect(
        Object.keys(s.labels)
          .filter((l) => l !== "le")
          .sort(),
      ).toEqual(labels);
  });

  it("counts 423 Locked answers in their own family", () => {
    // No sample unless the platform answered 423 during the run; the family is always declared.
    expect(metrics.types.get("neon_cloud_operator_platform_locked_total")).toBe("counter");
  });

  it("names controllers and queues as controller-runtime does, and reports this replica as leader", () => {
    const value = (family: string, labels: Record<string, string>) =>
      metrics.samples.find(
        (s) => s.family === family && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
      )?.value;
    expect(value("controller_runtime_max_concurrent_reconciles", { controller: "computeendpoint" })).toBe(4);
    expect(value("workqueue_adds_total", { name: "apikey", controller: "apikey" })).toBeGreaterThan(0);
    expect(value("workqueue_adds_total", { name: "branch", controller: "branch" })).toBeGreaterThan(0);
    expect(value("leader_election_master_status", { name: "gitops-proof" })).toBe(1);
    expect(
      value("controller_runtime_terminal_reconcile_errors_total", { controller: "computeendpoint" }),
    ).toBe(1);
    expect(value("neon_cloud_operator_platform_operations_in_flight", { action: "apply_config" })).toBe(1);
  });
});

describe("logs of the running operator", () => {
  const lines = () => logs.lines.map((l) => JSON.parse(l) as Record<string, unknown>);

  it("name the object and a reconcile id on every line of a reconcile, platform requests included", () => {
    const inReconcile = lines().filter((l) => l.reconcileID !== undefined);
    expect(inReconcile.length).toBeGreaterThan(0);
    for (const l of inReconcile) {
      expect(l).toMatchObject({
        namespace,
        controllerKind: expect.toBeOneOf(Object.keys(plurals)),
      });
      expect(typeof l.name).toBe("string");
    }
    const requests = lines().filter((l) => l.msg === "platform request");
    expect(requests.length).toBeGreaterThan(0);
    for (const r of requests) expect(r, JSON.stringify(r)).toHaveProperty("reconcileID");
  });

  it("log errors in one shape: err with a type and a message", () => {
    const withErr = lines().filter((l) => l.err !== undefined);
    expect(withErr.length, "the failing phases logged errors").toBeGreaterThan(0);
    for (const l of withErr)
      expect(l.err, JSON.stringify(l)).toMatchObject({
        type: expect.any(String),
        message: expect.any(String),
      });
  });

  it("never contain an API key value", async () => {
    const stored = JSON.parse(
      await kubectl(["get", "secret", "ready-api-key", "-n", namespace, "-o", "jsonpath={.data}"]),
    ) as { apiKey: string };
    const key = Buffer.from(stored.apiKey, "base64").toString("utf8");
    expect(key.length).toBeGreaterThan(8);
    for (const secret of [key, emulator.bootstrapKey, "not-a-key-the-platform-knows"])
      expect(logs.text()).not.toContain(secret);
  });
});

describe("alerts and dashboard (deploy/components/alerts, deploy/components/dashboard)", () => {
  /** Series Prometheus makes itself or that kube-state-metrics-free setups still have. */
  const fromPrometheus = new Set(["up"]);

  it("the PrometheusRule parses as promtool parses rules, and every alert names only exposed metrics", async () => {
    const rules = await checkRules(
      tool,
      join(repoRoot, "deploy", "components", "alerts", "prometheusrule.yaml"),
    );
    expect(rules.length).toBeGreaterThan(5);
    for (const rule of rules) {
      expect(rule.alert, "every rule is an alert").toBeTruthy();
      expect(rule.metrics.length, `${rule.alert} selects a metric`).toBeGreaterThan(0);
      const unknown = rule.metrics.filter((m) => !metrics.seriesNames.has(m) && !fromPrometheus.has(m));
      expect(unknown, `${rule.alert} names metrics the operator does not expose`).toEqual([]);
    }
  });

  it("every dashboard query parses and names only exposed metrics", async () => {
    const dashboard = JSON.parse(
      await readFile(join(repoRoot, "deploy", "components", "dashboard", "neon-cloud-operator.json"), "utf8"),
    ) as {
      panels: { title: string; targets?: { expr: string }[] }[];
      templating: { list: { query?: unknown }[] };
    };
    const queries = dashboard.panels.flatMap((p) =>
      (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })),
    );
    expect(queries.length).toBeGreaterThan(10);
    // Grafana fills its variables in before Prometheus sees a query.
    const filled = queries.map((q) => q.expr.replaceAll("$__rate_interval", "5m").replaceAll("$job", ".*"));
    const reports = await promqlMetrics(tool, filled);
    reports.forEach((r, i) => {
      const panel = queries[i]?.panel;
      expect(r.error, `${panel}: ${filled[i]}`).toBeUndefined();
      expect(r.metrics.length, panel).toBeGreaterThan(0);
      expect(
        r.metrics.filter((m) => !metrics.seriesNames.has(m)),
        panel,
      ).toEqual([]);
    });
    // The families a controller-runtime dashboard shows are all on it.
    const shown = new Set(reports.flatMap((r) => r.metrics));
    for (const name of [
      "controller_runtime_reconcile_total",
      "workqueue_depth",
      "leader_election_master_status",
    ])
      expect(shown).toContain(name);
  });
});
