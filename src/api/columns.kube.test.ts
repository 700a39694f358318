// What `kubectl get` shows of each kind, read from kubectl's own table on the real API server (the
// printer columns of src/api/*.ts, through the committed CRDs). The status is written here as the
// operator would write it, so each column is seen with the values a user meets.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNamespace, kubectl } from "../../test/support/kube.ts";

let namespace: string;

beforeAll(async () => {
  namespace = await createNamespace("columns");
});

afterAll(async () => {
  await kubectl(["delete", "namespace", namespace, "--wait=false"]);
});

async function create(kind: string, name: string, spec: object, status: object): Promise<void> {
  await kubectl(["apply", "-n", namespace, "-f", "-"], {
    input: JSON.stringify({ apiVersion: "neoncloud.dev/v1alpha1", kind, metadata: { name }, spec }),
  });
  await kubectl([
    "patch",
    kind.toLowerCase(),
    name,
    "-n",
    namespace,
    "--subresource=status",
    "--type=merge",
    "-p",
    JSON.stringify({ status }),
  ]);
}

/** kubectl's table as rows of column name → cell (cells start where their header starts). */
async function table(resource: string, name: string, ...flags: string[]): Promise<Record<string, string>> {
  const out = await kubectl(["get", resource, name, "-n", namespace, ...flags]);
  const [header = "", row = ""] = out.split("\n");
  const starts = [...header.matchAll(/\S+(?: \S+)*/g)].map((m) => ({ name: m[0], at: m.index }));
  return Object.fromEntries(
    starts.map((c, i) => [c.name, row.slice(c.at, starts[i + 1]?.at ?? row.length).trim()]),
  );
}

describe("kubectl get computeendpoints", () => {
  it("PROJECT shows the project a projectRef resolved to, as status records it", async () => {
    await create(
      "ComputeEndpoint",
      "by-ref",
      { projectRef: { name: "tenant" }, branchId: "br-main" },
      { projectId: "proj-tenant", branchId: "br-main" },
    );
    expect(await table("cep", "by-ref")).toMatchObject({ PROJECT: "proj-tenant", BRANCH: "br-main" });
  });

  it("BRANCH shows the branch a branchRef resolved to", async () => {
    await create(
      "ComputeEndpoint",
      "on-ref",
      { projectId: "proj-alpha", branchRef: { name: "preview" } },
      { branchId: "br-preview-1", currentState: "active" },
    );
    expect(await table("cep", "on-ref")).toMatchObject({ BRANCH: "br-preview-1", STATE: "active" });
  });

  it("BRANCH shows where the endpoint is, not where a refused move wants it", async () => {
    await create(
      "ComputeEndpoint",
      "refused-move",
      { projectId: "proj-alpha", branchId: "br-wanted" },
      { branchId: "br-actual" },
    );
    expect(await table("cep", "refused-move")).toMatchObject({ BRANCH: "br-actual" });
  });
});

describe("kubectl get apikeys -o wide", () => {
  it("NEXT ROTATION shows when the next rotation is, not <invalid>", async () => {
    const next = new Date(Date.now() + 30 * 24 * 3600 * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
    await create("ApiKey", "rotating", { rotation: { interval: "720h" } }, { nextRotationAt: next });
    const row = await table("apikeys", "rotating", "-o", "wide");
    expect(row["NEXT ROTATION"]).toBe(next);
  });
});
