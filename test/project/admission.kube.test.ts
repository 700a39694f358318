// What no change of a project can give is refused by the API server itself (CEL rules from the zod
// schema), before the operator sees it: a project's region, Postgres version, organization and
// default branch are fixed at its creation, logical replication once on stays on; and a Branch or
// ComputeEndpoint names its project once, by id or by a Project, adopting a default sensibly. The
// database-per-tenant sample (samples/tenants/) renders with kustomize and is admitted as rendered.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { kustomize, repoRoot, toolsTimeoutMs, type Loose } from "../deploy/render.ts";
import { createNamespace, kubectl } from "../support/kube.ts";

let namespace: string;

beforeAll(async () => {
  // No operator runs here: only the API server answers.
  namespace = await createNamespace("project-admission");
});

afterAll(async () => {
  await kubectl(["delete", "namespace", namespace, "--wait=false"]);
});

function apply(kind: string, name: string, spec: Record<string, unknown>): Promise<string> {
  return kubectl(["apply", "-n", namespace, "-f", "-"], {
    input: JSON.stringify({ apiVersion: "neoncloud.dev/v1alpha1", kind, metadata: { name }, spec }),
  });
}

const created = {
  regionId: "aws-us-east-2",
  pgVersion: 17,
  defaultBranch: { databaseName: "app" },
  settings: { enableLogicalReplication: true },
};

describe("Project admission", () => {
  it.each<[string, Record<string, unknown>, string]>([
    ["a region change", { regionId: "aws-eu-central-1" }, "regionId is fixed at the project's creation"],
    ["a region removed", { regionId: undefined }, "regionId is fixed at the project's creation"],
    ["a Postgres version change", { pgVersion: 18 }, "pgVersion is fixed at the project's creation"],
    ["an organization added", { orgId: "org-new" }, "orgId is fixed at the project's creation"],
    [
      "another default database",
      { defaultBranch: { databaseName: "other" } },
      "defaultBranch is fixed at the project's creation",
    ],
    [
      "logical replication turned off",
      { settings: { enableLogicalReplication: false } },
      "settings.enableLogicalReplication cannot be turned off once on",
    ],
  ])("refuses %s, and the stored spec stays", async (_, change, message) => {
    const name = `p-${Math.random().toString(36).slice(2, 8)}`;
    await apply("Project", name, created);
    await expect(apply("Project", name, { ...created, ...change })).rejects.toThrow(message);
    const stored = JSON.parse(await kubectl(["get", "project", name, "-n", namespace, "-o", "json"])) as {
      spec: typeof created;
    };
    expect(stored.spec).toMatchObject(created);
  });

  it("accepts what the platform can change: name, retention, settings, defaults, removing a managed field", async () => {
    await apply("Project", "changeable", created);
    await apply("Project", "changeable", {
      ...created,
      name: "renamed",
      historyRetention: "12h",
      defaultEndpointSettings: { computeUnits: { min: 0.5, max: 2 }, autosuspend: "never" },
      settings: { allowedIps: { ips: ["10.0.0.0/8", "2001:db8::/32", "192.168.0.1-192.168.0.9"] } },
    });
  });

  it.each<[Record<string, unknown>, string]>([
    [{ historyRetention: "721h" }, "historyRetention must be at most 720h"],
    [{ historyRetention: "7d" }, "spec.historyRetention"],
    [{ pgVersion: 13 }, "spec.pgVersion"],
    [{ managementPolicy: "ObserveOnly" }, "managementPolicy ObserveOnly needs a projectId to observe"],
    [
      { settings: { maintenanceWindow: { weekdays: [8], startTime: "01:00", endTime: "02:00" } } },
      "spec.settings.maintenanceWindow.weekdays[0]",
    ],
    [
      { settings: { maintenanceWindow: { weekdays: [1, 1], startTime: "01:00", endTime: "02:00" } } },
      "Duplicate value",
    ],
    [
      { settings: { maintenanceWindow: { weekdays: [1], startTime: "01:00", endTime: "01:00" } } },
      "endTime must differ from startTime",
    ],
    [{ settings: { allowedIps: { ips: ["everyone"] } } }, "spec.settings.allowedIps.ips[0]"],
    [{ deletionPolicy: "Keep" }, 'spec.deletionPolicy: Unsupported value: "Keep"'],
  ])("refuses %j", async (spec, message) => {
    await expect(apply("Project", "bad", spec)).rejects.toThrow(message);
  });

  it("keeps an adopted id once set", async () => {
    await apply("Project", "adopting", { projectId: "proj-one" });
    await expect(apply("Project", "adopting", { projectId: "proj-two" })).rejects.toThrow(
      "projectId is immutable once set",
    );
  });
});

describe("a Branch or ComputeEndpoint naming a Project", () => {
  it.each<[string, string, Record<string, unknown>, string]>([
    [
      "Branch",
      "both ids",
      { projectId: "p", projectRef: { name: "shop" } },
      "exactly one of projectId and projectRef",
    ],
    ["Branch", "neither", {}, "exactly one of projectId and projectRef"],
    [
      "Branch",
      "the default branch with a parent",
      { projectRef: { name: "shop", defaultBranch: true }, parent: { branchName: "dev" } },
      "it takes no parent and no branchId",
    ],
    [
      "ComputeEndpoint",
      "the default endpoint on a branch of its own",
      { projectRef: { name: "shop", defaultEndpoint: true }, branchId: "br-x" },
      "with projectRef.defaultEndpoint",
    ],
    [
      "ComputeEndpoint",
      "the default endpoint as a read replica",
      { projectRef: { name: "shop", defaultEndpoint: true }, type: "read_only" },
      "with projectRef.defaultEndpoint",
    ],
    [
      "ComputeEndpoint",
      "a branch, without the default endpoint",
      { projectRef: { name: "shop" } },
      "set exactly one of branchId and branchRef",
    ],
  ])("%s: refuses %s", async (kind, _, spec, message) => {
    await expect(apply(kind, "bad", spec)).rejects.toThrow(message);
  });

  it("accepts the defaults adopted, and keeps the project it names", async () => {
    await apply("Branch", "trunk", { projectRef: { name: "shop", defaultBranch: true } });
    await apply("ComputeEndpoint", "trunk-rw", { projectRef: { name: "shop", defaultEndpoint: true } });
    await apply("ComputeEndpoint", "replica", {
      projectRef: { name: "shop" },
      branchRef: { name: "trunk" },
      type: "read_only",
    });
    for (const [kind, name] of [
      ["Branch", "trunk"],
      ["ComputeEndpoint", "trunk-rw"],
    ] as const) {
      const adopt = kind === "Branch" ? { defaultBranch: true } : { defaultEndpoint: true };
      await expect(apply(kind, name, { projectRef: { name: "other", ...adopt } })).rejects.toThrow(
        "projectId and projectRef are immutable",
      );
      await expect(apply(kind, name, { projectId: "proj-alpha" })).rejects.toThrow(
        "projectId and projectRef are immutable",
      );
    }
  });
});

describe("the database-per-tenant sample (samples/tenants/)", () => {
  const tenants = ["acme", "globex"];
  const rendered = new Map<string, Loose[]>();
  let grant: Loose;

  beforeAll(async () => {
    for (const tenant of tenants) rendered.set(tenant, await kustomize(`samples/tenants/${tenant}`));
    grant = parse(await readFile(join(repoRoot, "samples", "tenants", "grant.yaml"), "utf8"));
  }, toolsTimeoutMs);

  it("renders, for each tenant, a namespace the grant selects and a Project in it that keeps its data", () => {
    const names = new Set<string>();
    for (const tenant of tenants) {
      const objects = rendered.get(tenant) ?? [];
      expect(objects.map((o) => o.kind).sort()).toEqual(["Branch", "Namespace", "Project"]);
      const ns = objects.find((o) => o.kind === "Namespace");
      const project = objects.find((o) => o.kind === "Project");
      expect(ns.metadata.name).toBe(`tenant-${tenant}`);
      expect(project.metadata.namespace).toBe(ns.metadata.name);
      // The default branch kept as it is (adopted, Orphan by default) with a nightly schedule.
      const production = objects.find((o) => o.kind === "Branch");
      expect(production.metadata.namespace).toBe(ns.metadata.name);
      expect(production.spec.projectRef).toEqual({ name: project.metadata.name, defaultBranch: true });
      expect(production.spec).not.toHaveProperty("deletionPolicy");
      expect(production.spec.backupSchedule).toEqual([{ frequency: "daily", hour: 2, retention: "168h" }]);
      // The grant's selector picks the tenant's namespace by its labels.
      expect(ns.metadata.labels).toMatchObject(grant.spec.namespaceSelector.matchLabels);
      expect(project.spec.name).toBe(`tenant-${tenant}`);
      expect(project.spec.connectionSecret).toEqual({ name: "db-connection" });
      // Left out on purpose: the default, Orphan, keeps the tenant's project when the resource goes.
      expect(project.spec).not.toHaveProperty("deletionPolicy");
      names.add(project.spec.name);
    }
    expect(names.size).toBe(tenants.length);
    // The grant lets the tenants create projects, and nothing more.
    expect(grant.spec).toEqual({
      namespaceSelector: { matchLabels: { "example.com/tenant": "true" } },
      createProjects: true,
    });
  });

  it.each(tenants)("tenant %s, and the grant, are admitted by the API server as rendered", async (tenant) => {
    const objects = rendered.get(tenant) ?? [];
    // The tenant's namespace does not exist in a dry run: its Project is tried in this test's.
    const project = { ...objects.find((o) => o.kind === "Project"), metadata: { name: "db", namespace } };
    const dryRun = (objs: object[]) =>
      kubectl(["apply", "--server-side", "--dry-run=server", "--validate=strict", "-f", "-"], {
        input: objs.map((o) => JSON.stringify(o)).join("\n"),
      });
    expect(await dryRun([...objects.filter((o) => o.kind === "Namespace"), grant])).toMatch(
      new RegExp(
        `namespace/tenant-${tenant} serverside-applied \\(server dry run\\)[\\s\\S]*credentialsgrant.neoncloud.dev/tenants serverside-applied`,
      ),
    );
    expect(await dryRun([project])).toContain("project.neoncloud.dev/db serverside-applied (server dry run)");
    const production = {
      ...objects.find((o) => o.kind === "Branch"),
      metadata: { name: "production", namespace },
    };
    expect(await dryRun([production])).toContain(
      "branch.neoncloud.dev/production serverside-applied (server dry run)",
    );
  });

  it("the restore (samples/tenants/restore) is a Snapshot of production and a Branch with an endpoint from it, admitted as rendered", async () => {
    const objects = (await kustomize("samples/tenants/restore")).map((o) => ({
      ...o,
      metadata: { ...o.metadata, namespace },
    }));
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      "Branch/restored",
      "ComputeEndpoint/restored",
      "Snapshot/restore-point",
    ]);
    const out = await kubectl(
      ["apply", "--server-side", "--dry-run=server", "--validate=strict", "-f", "-"],
      {
        input: objects.map((o) => JSON.stringify(o)).join("\n"),
      },
    );
    expect(out).toContain("snapshot.neoncloud.dev/restore-point serverside-applied (server dry run)");
    expect(out).toContain("branch.neoncloud.dev/restored serverside-applied (server dry run)");
    expect(out).toContain("computeendpoint.neoncloud.dev/restored serverside-applied (server dry run)");
  });
});
