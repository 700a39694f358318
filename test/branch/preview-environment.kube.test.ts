// The preview-environment example as Argo CD would deploy it for one pull request: the
// ApplicationSet's template filled with a pull request's parameters, the Application's kustomize
// options applied to samples/preview-environment/base in an overlay, rendered by kustomize, and
// accepted by the real API server (server-side dry run, strict field validation); the
// ApplicationSet and the Application it generates are validated by Argo CD's own CRDs.
import { randomBytes } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { installArgoCdCrds } from "../support/argocd-crds.ts";
import { kubectl } from "../support/kube.ts";
import { kustomize, repoRoot, toolsTimeoutMs, type Loose, type Manifest } from "../deploy/render.ts";

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
});
