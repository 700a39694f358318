// Bad Branch specs, and a ComputeEndpoint naming its branch twice or not at all, are refused by
// the API server itself (CEL rules from the zod schema) with a message naming the field and rule.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { createNamespace, kubectl } from "../support/kube.ts";

let namespace: string;

beforeAll(async () => {
  namespace = await createNamespace("branch-admission");
});

afterAll(async () => {
  await kubectl(["delete", "namespace", namespace, "--wait=false"]);
});

function apply(kind: string, name: string, spec: Record<string, unknown>): Promise<string> {
  return kubectl(["apply", "-n", namespace, "-f", "-"], {
    input: JSON.stringify({
      apiVersion: "neoncloud.dev/v1alpha1",
      kind,
      metadata: { name },
      spec: { projectId: "proj-alpha", ...spec },
    }),
  });
}

const branch = (name: string, spec: Record<string, unknown>) => apply("Branch", name, spec);

describe("Branch admission", () => {
  it.each([
    [
      { parent: {} },
      "parent needs exactly one of branchId, branchName, branchRef, snapshotId or snapshotRef",
    ],
    [
      { parent: { branchId: "br-dev", branchName: "dev" } },
      "parent needs exactly one of branchId, branchName, branchRef, snapshotId or snapshotRef",
    ],
    [
      { parent: { branchName: "dev", branchRef: { name: "base" } } },
      "parent needs exactly one of branchId, branchName, branchRef, snapshotId or snapshotRef",
    ],
    [{ expiresAt: "2030-01-01T00:00:00Z", ttl: "72h" }, "set expiresAt or ttl, not both"],
    [{ expiresAt: "next week" }, "spec.expiresAt"],
    [{ ttl: "3 days" }, "spec.ttl"],
    // The duration's own bound survives its immutability (both are rules of spec.ttl).
    [{ ttl: "0s" }, "ttl must be at least 1s"],
    [{ ttl: "500ms" }, "ttl must be at least 1s"],
    [{ name: "" }, "spec.name"],
    [{ deletionPolicy: "Keep" }, 'spec.deletionPolicy: Unsupported value: "Keep"'],
    [{ parent: { branchId: "BR_1" } }, "spec.parent.branchId"],
    [{ roles: [{ name: "app" }, { name: "app" }] }, 'spec.roles[1]: Duplicate value: {"name":"app"}'],
    [{ roles: [{ name: "é".repeat(32) }] }, "must be at most 63 bytes (a Postgres name)"],
    [{ databases: [{ name: "shop" }] }, "spec.databases[0].owner: Required value"],
    [
      {
        databases: [
          { name: "shop", owner: "app" },
          { name: "shop", owner: "other" },
        ],
      },
      "spec.databases[1]: Duplicate value",
    ],
  ])("refuses %j with a message naming the rule", async (spec, message) => {
    await expect(branch("bad", spec)).rejects.toThrow(message);
  });

  it.each([
    [{ projectId: "proj-beta" }, "projectId is immutable"],
    [{ parent: { branchName: "staging" } }, "parent is immutable"],
    [{ parent: undefined }, "parent is immutable"],
    [{ ttl: "48h" }, "ttl is immutable"],
    [
      { ttl: undefined },
      "ttl can only be replaced by expiresAt (which then moves the expiry), not removed alone",
    ],
    [{ branchId: "br-other" }, "branchId is immutable once set"],
  ])("refuses changing %j after creation", async (change, message) => {
    const first = { parent: { branchName: "dev" }, ttl: "72h", branchId: "br-adopted" };
    await branch("fixed", first);
    await expect(branch("fixed", { ...first, ...change })).rejects.toThrow(message);
  });

  it("refuses a ttl added after creation: it counts from the creation", async () => {
    await branch("late-ttl", { parent: { branchName: "dev" } });
    await expect(branch("late-ttl", { parent: { branchName: "dev" }, ttl: "72h" })).rejects.toThrow(
      "ttl cannot be added after creation (it counts from the creation): set expiresAt instead",
    );
    await branch("late-expiry", { parent: { branchName: "dev" }, expiresAt: "2030-01-01T00:00:00Z" });
    await expect(branch("late-expiry", { parent: { branchName: "dev" }, ttl: "72h" })).rejects.toThrow(
      "ttl cannot be added after creation",
    );
  });

  it("lets a ttl be replaced by expiresAt, and that expiry moved again (docs/preview-environments.md, step 6)", async () => {
    const first = { parent: { branchName: "dev" }, ttl: "72h" };
    await branch("extended", first);
    // As a user would: a JSON patch that takes ttl out and puts expiresAt in, in one request.
    const extend = (ops: object[]) =>
      kubectl(["patch", "branch", "extended", "-n", namespace, "--type=json", "-p", JSON.stringify(ops)]);
    await extend([
      { op: "remove", path: "/spec/ttl" },
      { op: "add", path: "/spec/expiresAt", value: "2030-01-01T00:00:00Z" },
    ]);
    await extend([{ op: "replace", path: "/spec/expiresAt", value: "2030-02-01T00:00:00Z" }]);
    const spec = JSON.parse(
      await kubectl(["get", "branch", "extended", "-n", namespace, "-o", "jsonpath={.spec}"]),
    ) as Record<string, unknown>;
    expect(spec).toMatchObject({ expiresAt: "2030-02-01T00:00:00Z" });
    expect(spec).not.toHaveProperty("ttl");
    // Both at once stays refused, on an update as on a create.
    await expect(extend([{ op: "add", path: "/spec/ttl", value: "72h" }])).rejects.toThrow(
      "set expiresAt or ttl, not both",
    );
  });

  it("allows a rename, protection and a new expiry after creation", async () => {
    await branch("changing", { parent: { branchName: "dev" }, name: "one" });
    await branch("changing", {
      parent: { branchName: "dev" },
      name: "two",
      protected: true,
      expiresAt: "2030-01-01T00:00:00+02:00",
    });
  });
});

describe("ComputeEndpoint branchRef admission", () => {
  it.each([
    [{}, "set exactly one of branchId and branchRef"],
    [{ branchId: "br-dev", branchRef: { name: "db" } }, "set exactly one of branchId and branchRef"],
    [{ branchRef: { name: "Not_A_Name" } }, "spec.branchRef.name"],
  ])("refuses %j", async (spec, message) => {
    await expect(apply("ComputeEndpoint", "bad", spec)).rejects.toThrow(message);
  });

  it("accepts a branchRef", async () => {
    await apply("ComputeEndpoint", "on-ref", { branchRef: { name: "db" } });
  });
});

describe("the sample", () => {
  it("samples/branch-preview.yaml (a Branch and a ComputeEndpoint on it) is admitted", async () => {
    const file = join(import.meta.dirname, "../../samples/branch-preview.yaml");
    const out = await kubectl(["apply", "--dry-run=server", "-n", namespace, "-f", file]);
    expect(out).toContain("branch.neoncloud.dev/shop-preview created (server dry run)");
    expect(out).toContain("computeendpoint.neoncloud.dev/shop-preview created (server dry run)");
  });
});
