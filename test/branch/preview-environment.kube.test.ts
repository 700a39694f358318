// The preview-environment example as Argo CD would deploy it for one pull request: the
// ApplicationSet's template filled with a pull request's parameters, the Application's kustomize
// options applied to samples/preview-environment/base in an overlay, rendered by kustomize, and
// accepted by the real API server (server-side dry run, strict field validation, then applied
// server-side as Argo CD's field manager); the ApplicationSet and the Application it generates are
// validated by Argo CD's own CRDs. Then the steps of docs/preview-environments.md that need no
// Argo CD run as written (the shell blocks of the page itself) against the real API server, the
// operator and the emulator.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { parse } from "yaml";
import { loadConfig } from "../../src/config.ts";
import { startOperator, type RunningOperator } from "../../src/operator.ts";
import { loadSeedFile, startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import { installArgoCdCrds } from "../support/argocd-crds.ts";
import { adminKubeConfig, createNamespace, eventually, kubectl } from "../support/kube.ts";
import { LogCapture } from "../support/operator.ts";
import { kustomize, repoRoot, toolsTimeoutMs, type Loose, type Manifest } from "../deploy/render.ts";

const exec = promisify(execFile);

const example = join(repoRoot, "samples", "preview-environment");

/** A pull request as Argo CD's pull-request generator describes it (its template parameters). */
const pullRequest = {
  number: "42",
  branch: "feature/checkout",
  branch_slug: "feature-checkout",
  target_branch: "main",
  head_sha: "9f3c2a1b7e6d5c4b3a29180716f5e4d3c2b1a090",
  head_short_sha: "9f3c2a1b",
};

/** Fills `{{.name}}` as Argo CD's goTemplate does with missingkey=error: an unknown name fails. */
function fill(text: string, params: Record<string, string>): string {
  return text.replace(/\{\{\s*\.(\w+)\s*\}\}/g, (_, key: string) => {
    const value = params[key];
    if (value === undefined) throw new Error(`the template names {{.${key}}}, which the generator has not`);
    return value;
  });
}

/** The Application the ApplicationSet generates for the pull request. */
async function application(): Promise<Loose> {
  const set: Loose = parse(await readFile(join(example, "applicationset.yaml"), "utf8"));
  return parse(fill(JSON.stringify(set.spec.template), pullRequest));
}

/**
 * What Argo CD renders for an Application's kustomize source: the path, with the Application's
 * namespace and patches on top (an overlay, as Argo CD itself writes one).
 */
async function render(app: Loose): Promise<Manifest[]> {
  const dir = join(repoRoot, ".tmp", `preview-${randomBytes(4).toString("hex")}`);
  await mkdir(dir, { recursive: true });
  try {
    const overlay = {
      apiVersion: "kustomize.config.k8s.io/v1beta1",
      kind: "Kustomization",
      namespace: app.spec.destination.namespace as string,
      resources: [relative(dir, join(repoRoot, app.spec.source.path as string))],
      patches: app.spec.source.kustomize.patches as unknown[],
    };
    await writeFile(join(dir, "kustomization.yaml"), JSON.stringify(overlay));
    return await kustomize(relative(repoRoot, dir));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

let app: Loose;
let objects: Manifest[];
const find = (kind: string): Loose => objects.find((o) => o.kind === kind);

beforeAll(async () => {
  app = await application();
  objects = await render(app);
  await kubectl(["create", "namespace", app.spec.destination.namespace as string]);
}, toolsTimeoutMs);

afterAll(async () => {
  await kubectl(["delete", "namespace", app.spec.destination.namespace as string, "--wait=false"]);
});

describe("a preview environment for pull request 42", () => {
  it("is an Application at the pull request's head commit, pruned and deleted with it", () => {
    expect(app.metadata.name).toBe("shop-pr-42");
    expect(app.metadata.finalizers).toContain("resources-finalizer.argocd.argoproj.io");
    expect(app.spec.source.targetRevision).toBe(pullRequest.head_sha);
    expect(app.spec.destination.namespace).toBe("shop-pr-42");
    expect(app.spec.syncPolicy.syncOptions).toContain("CreateNamespace=true");
  });

  it("renders a Branch from main, named after the pull request, expiring 3 days after its creation", () => {
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      "Branch/preview",
      "ComputeEndpoint/preview",
      "Deployment/shop",
    ]);
    expect(objects.every((o) => o.metadata.namespace === "shop-pr-42")).toBe(true);
    const branch = find("Branch");
    expect(branch.spec).toMatchObject({
      parent: { branchName: "main" },
      name: "preview-pr-42",
      ttl: "72h",
      deletionPolicy: "Delete",
    });
  });

  it("puts an endpoint on that Branch whose connection Secret the Deployment reads", () => {
    const branch = find("Branch");
    const endpoint = find("ComputeEndpoint");
    const deployment = find("Deployment");
    expect(endpoint.spec.branchRef.name).toBe(branch.metadata.name);
    const secret = endpoint.spec.connectionSecret;
    // The endpoint connects as a role to a database the Branch makes sure of.
    expect(branch.spec.roles).toContainEqual({ name: secret.role });
    expect(branch.spec.databases).toContainEqual({ name: secret.database, owner: secret.role });
    const container = deployment.spec.template.spec.containers[0];
    expect(container.envFrom).toEqual([{ secretRef: { name: secret.name } }]);
    expect(container.image).toBe(`ghcr.io/example/shop:${pullRequest.head_sha}`);
  });

  it(
    "is an ApplicationSet, and generates an Application, that Argo CD's own CRDs accept",
    async () => {
      await installArgoCdCrds();
      await kubectl(["apply", "-f", "-"], {
        input: JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: "argocd" } }),
      });
      const dryRun = (objs: object[]) =>
        kubectl(["apply", "--dry-run=server", "--validate=strict", "-f", "-"], {
          input: objs.map((o) => JSON.stringify(o)).join("\n"),
        });
      const set: Loose = parse(await readFile(join(example, "applicationset.yaml"), "utf8"));
      expect(await dryRun([set])).toContain(
        "applicationset.argoproj.io/shop-previews created (server dry run)",
      );
      const generated = {
        apiVersion: "argoproj.io/v1alpha1",
        kind: "Application",
        ...app,
        metadata: { ...app.metadata, namespace: "argocd" },
      };
      expect(await dryRun([generated])).toContain(
        "application.argoproj.io/shop-pr-42 created (server dry run)",
      );
      // The schema is enforced: a field Argo CD does not know (`labels` misspelt) is refused.
      const typo = structuredClone(set);
      typo.spec.generators[0].pullRequest.github.label = "preview";
      await expect(dryRun([typo])).rejects.toThrow(
        /unknown field "spec.generators\[0\].pullRequest.github.label"/,
      );
    },
    toolsTimeoutMs,
  );

  it("is accepted by the API server as rendered", async () => {
    const out = await kubectl(["apply", "--dry-run=server", "--validate=strict", "-f", "-"], {
      input: objects.map((o) => JSON.stringify(o)).join("\n"),
    });
    expect(out).toContain("branch.neoncloud.dev/preview created (server dry run)");
    expect(out).toContain("computeendpoint.neoncloud.dev/preview created (server dry run)");
    expect(out).toContain("deployment.apps/shop created (server dry run)");
  });

  it("is applied server-side as Argo CD's field manager, and a second sync changes nothing", async () => {
    const sync = () =>
      kubectl(
        ["apply", "--server-side", "--field-manager=argocd-controller", "--validate=strict", "-f", "-"],
        { input: objects.map((o) => JSON.stringify(o)).join("\n") },
      );
    expect(await sync()).toContain("branch.neoncloud.dev/preview serverside-applied");
    const generation = () =>
      kubectl(["get", "branch", "preview", "-n", "shop-pr-42", "-o", "jsonpath={.metadata.generation}"]);
    const before = await generation();
    await sync();
    const after = await generation();
    expect(after).toBe(before);
  });
});

/** The shell blocks of a numbered step of docs/preview-environments.md ("3. **Try one ..."). */
async function stepCommands(step: number): Promise<string> {
  const page = await readFile(join(repoRoot, "docs", "preview-environments.md"), "utf8");
  const start = page.indexOf(`\n${step}. **`);
  const end = page.indexOf(`\n${step + 1}. **`, start + 1);
  if (start < 0) throw new Error(`docs/preview-environments.md has no step ${step}`);
  const text = page.slice(start, end < 0 ? undefined : end);
  const blocks = [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => (m[1] ?? "").replace(/^ {3}/gm, ""));
  if (blocks.length === 0) throw new Error(`step ${step} of docs/preview-environments.md has no commands`);
  return blocks.join("\n");
}

/**
 * kubectl for the page's commands: the test's binary and API server. A watch (`-w`) runs until
 * what it lists is Ready, then prints the table once, so a script can go on past it.
 */
async function kubectlForTheDocs(dir: string): Promise<void> {
  const wrapper = `#!/usr/bin/env node
const { spawnSync } = require("node:child_process");
const real = ${JSON.stringify(inject("kubectl"))};
const args = process.argv.slice(2);
const run = (a) => { const r = spawnSync(real, a, { stdio: "inherit" }); if (r.status !== 0) process.exit(r.status ?? 1); };
const watch = args.indexOf("-w");
if (watch >= 0) {
  const rest = args.filter((_, i) => i !== watch);
  const ns = rest[rest.indexOf("-n") + 1];
  for (const kind of rest[1].split(",")) run(["wait", "--for=condition=Ready", kind, "--all", "-n", ns, "--timeout=120s"]);
  run(rest);
} else run(args);
`;
  await writeFile(join(dir, "kubectl"), wrapper);
  await chmod(join(dir, "kubectl"), 0o755);
}

/** The Branch as kubectl shows it. */
interface BranchView {
  metadata: { annotations?: Record<string, string> };
  spec: Record<string, unknown>;
  status?: {
    branchId?: string;
    name?: string;
    roles?: string[];
    expiresAt?: string;
    restoredFromParentAt?: string;
    observedGeneration?: number;
    conditions?: { type: string; status: string; reason: string }[];
  };
}

describe("the steps of docs/preview-environments.md, as written, with the operator and the emulator", () => {
  let namespace: string;
  let emulator: Emulator;
  let operator: RunningOperator | undefined;
  let bin: string;
  const logs = new LogCapture();

  /** Runs commands of the page in the repository, in this test's namespace instead of the page's. */
  async function runStep(step: number): Promise<string> {
    const script = (await stepCommands(step))
      .replace(/shop-pr-(manual|42)/g, namespace)
      // The test made the namespace already (the operator watches that one).
      .replace(/^kubectl create namespace .*$/m, "");
    const { stdout } = await exec("sh", ["-ec", script], {
      cwd: repoRoot,
      env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ""}`, KUBECONFIG: inject("kubeconfig") },
    });
    return stdout;
  }

  const preview = async (): Promise<BranchView> =>
    JSON.parse(await kubectl(["get", "branch", "preview", "-n", namespace, "-o", "json"])) as BranchView;

  /** The project's branches as the platform lists them (over HTTP, with the account's key). */
  async function platformBranches(): Promise<{ id: string; expires_at?: string }[]> {
    const answer = await fetch(`${emulator.url}/projects/demo-shop/branches`, {
      headers: { authorization: `Bearer ${emulator.bootstrapKey}` },
    });
    return ((await answer.json()) as { branches: { id: string; expires_at?: string }[] }).branches;
  }

  beforeAll(async () => {
    emulator = await startEmulator({
      rateLimits: false,
      operationDurationMs: 150,
      seed: await loadSeedFile(join(repoRoot, "tools", "emulator", "seeds", "demo.yaml")),
    });
    namespace = await createNamespace("preview");
    await kubectl(["apply", "-n", namespace, "-f", "-"], {
      input: JSON.stringify({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "neon-api-key", labels: { "neoncloud.dev/secret-type": "api-key" } },
        stringData: { apiKey: emulator.bootstrapKey },
      }),
    });
    const config = loadConfig([
      `--platform-base-url=${emulator.url}`,
      `--default-credentials-secret=${namespace}/neon-api-key`,
      "--no-leader-election",
      `--namespaces=${namespace}`,
      "--metrics-address=127.0.0.1:0",
      "--shutdown-deadline=2s",
    ]);
    operator = await startOperator(config, logs.logger, {
      kubeConfig: adminKubeConfig(),
      pollIntervalMs: 100,
    });
    bin = await mkdtemp(join(tmpdir(), "preview-docs-"));
    await kubectlForTheDocs(bin);
  });

  afterAll(async () => {
    await operator?.stop();
    await emulator?.close();
    if (bin) await rm(bin, { recursive: true, force: true });
    if (namespace) await kubectl(["delete", "namespace", namespace, "--wait=false"]);
  });

  it("step 3: one environment by hand: the Branch, then the endpoint Ready, and a DATABASE_URL in the Secret", async () => {
    const out = await runStep(3);
    expect(out).toMatch(/branch\.neoncloud\.dev\/preview\s+demo-shop\s+br-\S+\s+preview\s+ready\s+True/);
    expect(out).toMatch(
      /computeendpoint\.neoncloud\.dev\/preview\s+demo-shop\s+br-\S+\s+read_write\s+active/,
    );
    expect(out).toMatch(/postgresql:\/\/app:[^@\s]+@[^/\s]+\/shop\?sslmode=/);
    expect((await preview()).status).toMatchObject({ name: "preview", roles: ["app"] });
  });

  it("step 5: a new annotation value resets the preview from main, and it is Ready again", async () => {
    const before = await preview();
    await runStep(5);
    const after = await eventually(
      async () => {
        const b = await preview();
        const ready = b.status?.conditions?.find((c) => c.type === "Ready");
        const reset = b.status?.restoredFromParentAt !== before.status?.restoredFromParentAt;
        return reset && ready?.status === "True" && b.status?.observedGeneration !== undefined
          ? b
          : undefined;
      },
      { what: "the preview reset and Ready", timeoutMs: 60_000 },
    );
    expect(after.metadata.annotations?.["neoncloud.dev/restoredFromParentAt"]).toBe(
      after.status?.restoredFromParentAt,
    );
  });

  it("step 6: the ttl replaced by expiresAt and moved: the platform's branch expires then", async () => {
    await runStep(6);
    const { spec } = await preview();
    expect(spec).not.toHaveProperty("ttl");
    const wanted = spec.expiresAt as string;
    expect(wanted).toMatch(/^20\d\d-/);
    const moved = await eventually(
      async () => {
        const b = await preview();
        const at = b.status?.expiresAt;
        return at !== undefined && Date.parse(at) === Date.parse(wanted) ? b : undefined;
      },
      { what: "status.expiresAt to show the moved expiry", timeoutMs: 60_000 },
    );
    const onPlatform = (await platformBranches()).find((b) => b.id === moved.status?.branchId);
    expect(Date.parse(onPlatform?.expires_at ?? "")).toBe(Date.parse(wanted));
  });

  it("closing the pull request (the base deleted, as Argo CD's finalizer does) deletes the branch", async () => {
    const id = (await preview()).status?.branchId;
    expect(id).toBeDefined();
    await kubectl([
      "delete",
      "-n",
      namespace,
      "-k",
      "samples/preview-environment/base",
      "--wait=true",
      "--timeout=120s",
    ]);
    expect((await platformBranches()).filter((b) => b.id === id)).toEqual([]);
  });
});
