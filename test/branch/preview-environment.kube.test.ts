// The preview-environment example as Argo CD would deploy it for one pull request: the
// ApplicationSet's template filled with a pull request's parameters, the Application's kustomize
// options applied to samples/preview-environment/base in an overlay, rendered by kustomize, and
// accepted by the real API server (server-side dry run, strict field validation, then applied
// server-side as Argo CD's field manager, into a namespace labelled as the Application's
// managedNamespaceMetadata says); the ApplicationSet and the Application it generates are
// validated by Argo CD's own CRDs. Then the steps of docs/preview-environments.md that need no
// Argo CD run as printed (the shell blocks of the page itself, with the real kubectl, in the
// page's own namespaces) against the real API server, the emulator and the operator as installed:
// its key in a namespace of its own, so that only the page's CredentialsGrant lets it serve the
// previews.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import pg from "pg";
import { parse } from "yaml";
import { loadConfig } from "../../src/config.ts";
import { startOperator, type RunningOperator } from "../../src/operator.ts";
import { loadSeedFile, startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import { installArgoCdCrds } from "../support/argocd-crds.ts";
import { applyCredentialsSecret } from "../support/credentials.ts";
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
  // The namespace as Argo CD creates it (CreateNamespace=true), with the managed metadata.
  await kubectl(["apply", "-f", "-"], {
    input: JSON.stringify({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: {
        name: app.spec.destination.namespace as string,
        labels: app.spec.syncPolicy.managedNamespaceMetadata?.labels ?? {},
      },
    }),
  });
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

  it("creates its namespace with the label the example's CredentialsGrant selects", async () => {
    const grant: Loose = parse(await readFile(join(example, "grant.yaml"), "utf8"));
    const selected = grant.spec.namespaceSelector.matchLabels as Record<string, string>;
    expect(Object.keys(selected).length).toBeGreaterThan(0);
    expect(app.spec.syncPolicy.managedNamespaceMetadata.labels).toMatchObject(selected);
    // And nothing broader: the shop's project, no keys minted, no projects created.
    expect(grant.spec).toEqual({ namespaceSelector: { matchLabels: selected }, projects: ["demo-shop"] });
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

/** The shell blocks of a numbered step of docs/preview-environments.md ("3. **Try one ..."), in order. */
async function stepBlocks(step: number): Promise<string[]> {
  const page = await readFile(join(repoRoot, "docs", "preview-environments.md"), "utf8");
  const start = page.indexOf(`\n${step}. **`);
  const end = page.indexOf(`\n${step + 1}. **`, start + 1);
  if (start < 0) throw new Error(`docs/preview-environments.md has no step ${step}`);
  const text = page.slice(start, end < 0 ? undefined : end);
  const blocks = [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => (m[1] ?? "").replace(/^ {3}/gm, ""));
  if (blocks.length === 0) throw new Error(`step ${step} of docs/preview-environments.md has no commands`);
  return blocks;
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

describe("the steps of docs/preview-environments.md, as printed, with the operator as installed and the emulator", () => {
  /** The page's namespaces: step 3's by hand, and the one Argo CD made for pull request 42 (above). */
  const manual = "shop-pr-manual";
  const pr42 = "shop-pr-42";
  const masked = "shop-pr-masked";
  let operatorNamespace: string;
  let emulator: Emulator;
  let operator: RunningOperator | undefined;
  let bin: string;
  const logs = new LogCapture();

  /** Runs a shell block of the page as printed, from the repository's root, with the real kubectl. */
  async function runStep(step: number, block = 0): Promise<string> {
    const script = (await stepBlocks(step))[block];
    if (script === undefined) throw new Error(`step ${step} has no block ${block}`);
    const { stdout } = await exec("sh", ["-ec", script], {
      cwd: repoRoot,
      env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ""}`, KUBECONFIG: inject("kubeconfig") },
    });
    return stdout;
  }

  const preview = async (namespace: string): Promise<BranchView> =>
    JSON.parse(await kubectl(["get", "branch", "preview", "-n", namespace, "-o", "json"])) as BranchView;

  /** The project's branches as the platform lists them (over HTTP, with the account's key). */
  async function platformBranches(): Promise<{ id: string; name: string; expires_at?: string }[]> {
    const answer = await fetch(`${emulator.url}/projects/demo-shop/branches`, {
      headers: { authorization: `Bearer ${emulator.bootstrapKey}` },
    });
    return ((await answer.json()) as { branches: { id: string; name: string; expires_at?: string }[] })
      .branches;
  }

  beforeAll(async () => {
    emulator = await startEmulator({
      rateLimits: false,
      operationDurationMs: 150,
      seed: await loadSeedFile(join(repoRoot, "tools", "emulator", "seeds", "demo.yaml")),
    });
    // The operator's key in its own namespace, as the installs keep it: it serves another
    // namespace only where a CredentialsGrant says so (this namespace carries no test grant).
    operatorNamespace = await createNamespace("preview-operator", { granted: false });
    await applyCredentialsSecret(operatorNamespace, "neon-api-key", emulator.bootstrapKey);
    const config = loadConfig([
      `--platform-base-url=${emulator.url}`,
      `--default-credentials-secret=${operatorNamespace}/neon-api-key`,
      "--no-leader-election",
      `--namespaces=${manual},${pr42},${masked}`,
      "--metrics-address=127.0.0.1:0",
      "--shutdown-deadline=2s",
    ]);
    operator = await startOperator(config, logs.logger, {
      kubeConfig: adminKubeConfig(),
      pollIntervalMs: 100,
    });
    // The real kubectl, under its own name, for the page's commands.
    bin = await mkdtemp(join(tmpdir(), "preview-docs-"));
    await symlink(inject("kubectl"), join(bin, "kubectl"));
  });

  afterAll(async () => {
    await operator?.stop();
    await emulator?.close();
    if (bin) await rm(bin, { recursive: true, force: true });
    await kubectl(["delete", "credentialsgrant", "shop-previews", "--ignore-not-found"]);
    if (operatorNamespace) await kubectl(["delete", "namespace", operatorNamespace, "--wait=false"]);
  });

  it("without step 1, the installed operator's key serves no preview namespace (NotGranted)", async () => {
    await eventually(
      async () => {
        const b = await preview(pr42);
        const ready = b.status?.conditions?.find((c) => c.type === "Ready");
        return ready?.reason === "NotGranted" ? true : undefined;
      },
      { what: "the synced preview NotGranted before the grant", timeoutMs: 60_000 },
    );
  });

  it("step 1: the grant; step 3: one environment by hand, the Branch, then the endpoint Ready, and a DATABASE_URL", async () => {
    await runStep(1);
    const out = await runStep(3);
    expect(out).toMatch(/branch\.neoncloud\.dev\/preview\s+demo-shop\s+br-\S+\s+preview\s+ready\s+True/);
    expect(out).toMatch(
      /computeendpoint\.neoncloud\.dev\/preview\s+demo-shop\s+br-\S+\s+read_write\s+active/,
    );
    expect(out).toMatch(/postgresql:\/\/app:[^@\s]+@[^/\s]+\/shop\?sslmode=/);
    expect((await preview(manual)).status).toMatchObject({ name: "preview", roles: ["app"] });
    // The grant serves what Argo CD synced too: pull request 42's preview is Ready.
    await kubectl([
      "wait",
      "-n",
      pr42,
      "--for=condition=Ready",
      "--timeout=60s",
      "branch/preview",
      "computeendpoint/preview",
    ]);
    expect((await preview(pr42)).status).toMatchObject({ name: "preview-pr-42" });
  });

  it("step 5: a new annotation value resets pull request 42's preview from main, and it is Ready again", async () => {
    const before = await preview(pr42);
    await runStep(5);
    const after = await eventually(
      async () => {
        const b = await preview(pr42);
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
    const { spec } = await preview(pr42);
    expect(spec).not.toHaveProperty("ttl");
    const wanted = spec.expiresAt as string;
    expect(wanted).toMatch(/^20\d\d-/);
    const moved = await eventually(
      async () => {
        const b = await preview(pr42);
        const at = b.status?.expiresAt;
        return at !== undefined && Date.parse(at) === Date.parse(wanted) ? b : undefined;
      },
      { what: "status.expiresAt to show the moved expiry", timeoutMs: 60_000 },
    );
    const onPlatform = (await platformBranches()).find((b) => b.id === moved.status?.branchId);
    expect(Date.parse(onPlatform?.expires_at ?? "")).toBe(Date.parse(wanted));
  });

  it("step 7: a masked preview has every customer of main, with names, e-mails and phones masked", async () => {
    const out = await runStep(7);
    expect(out.trim().split("\n").at(-1)).toBe("anonymized");
    const secret = JSON.parse(await kubectl(["get", "secret", "preview-db", "-n", masked, "-o", "json"])) as {
      data: Record<string, string>;
    };
    const url = Buffer.from(secret.data.DATABASE_URL ?? "", "base64").toString("utf8");
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    type Customer = { id: number; name: string; email: string; phone: string };
    const rows = (await client.query<Customer>("select id, name, email, phone from customers order by id"))
      .rows;
    const orders = (await client.query<{ n: string }>("select count(*) as n from orders")).rows[0]?.n;
    await client.end();
    // The seed's production rows (tools/emulator/seeds/demo.yaml).
    const production = [
      [1, "Ada Lovelace", "ada@example.com", "+44 20 7946 0001"],
      [2, "Alan Turing", "alan@example.com", "+44 20 7946 0002"],
      [3, "Grace Hopper", "grace@example.com", "+1 202 555 0103"],
    ] as const;
    expect(rows.map((r) => r.id)).toEqual([1, 2, 3]);
    for (const [i, [, name, email, phone]] of production.entries()) {
      const row = rows[i]!;
      expect(row.name).not.toBe(name);
      expect(row.name).toMatch(/^\S+ \S+$/);
      expect(row.email).not.toBe(email);
      expect(row.email).toMatch(/^[^@\s]+@[^@\s]+\.[a-z]+$/);
      expect(row.phone).toBe(`${phone.slice(0, 3)}*****${phone.slice(-2)}`);
    }
    expect(orders).toBe("2");
    await runStep(7, 1);
    expect(await kubectl(["get", "namespace", masked, "--ignore-not-found", "-o", "name"])).toBe("");
  });

  it("closing the pull request (its resources deleted, as Argo CD's finalizer does) and step 3's clean-up delete both branches", async () => {
    const ids = [(await preview(pr42)).status?.branchId, (await preview(manual)).status?.branchId];
    expect(ids.every((id) => id !== undefined)).toBe(true);
    await kubectl(["delete", "-f", "-", "--wait=true", "--timeout=120s"], {
      input: objects.map((o) => JSON.stringify(o)).join("\n"),
    });
    await runStep(3, 1);
    expect(await kubectl(["get", "namespace", manual, "--ignore-not-found", "-o", "name"])).toBe("");
    expect((await platformBranches()).filter((b) => ids.includes(b.id))).toEqual([]);
  });
});
