// The Project's plan, table-driven: the one PATCH of exactly the fields that differ, what is left
// alone (a field the spec leaves out), and what no change can give.
import { describe, expect, it } from "vitest";
import { ProjectSpec } from "../../api/project.ts";
import type { PlatformProject } from "../../platform/index.ts";
import { createSpec, difference, plan, refusal } from "./plan.ts";

const mark = "k8s-0a1b2c3d-0123456789abcdef";

function project(fields: Partial<PlatformProject> = {}): PlatformProject {
  return {
    id: "tenant-1",
    name: mark,
    regionId: "aws-us-east-2",
    pgVersion: 17,
    proxyHost: "us-east-2.aws.neon.tech",
    orgId: undefined,
    historyRetentionSeconds: 86_400,
    storePasswords: true,
    settings: {},
    defaultEndpointSettings: { autoscalingLimitMinCu: 1, autoscalingLimitMaxCu: 1, suspendTimeoutSeconds: 0 },
    createdAt: "2026-11-25T00:00:00Z",
    updatedAt: "2026-11-25T00:00:00Z",
    ...fields,
  };
}

const spec = (fields: Record<string, unknown> = {}) => ProjectSpec.parse(fields);

describe("the PATCH a Project sends for a difference", () => {
  it.each<[string, Record<string, unknown>, Partial<PlatformProject>, object]>([
    ["nothing declared, nothing sent", {}, { settings: { allowedIps: { ips: ["1.2.3.4"] } } }, {}],
    ["a name the spec gives", { name: "acme" }, {}, { name: "acme" }],
    ["a retention in seconds", { historyRetention: "6h" }, {}, { historyRetentionSeconds: 21_600 }],
    ["the same retention", { historyRetention: "24h" }, {}, {}],
    [
      "an allow-list, its other half kept as the platform has it",
      { settings: { allowedIps: { ips: ["10.0.0.0/8"] } } },
      { settings: { allowedIps: { ips: [], protectedBranchesOnly: true } } },
      { settings: { allowedIps: { ips: ["10.0.0.0/8"], protectedBranchesOnly: true } } },
    ],
    [
      "the same allow-list in another order",
      { settings: { allowedIps: { ips: ["10.0.0.2", "10.0.0.1"] } } },
      { settings: { allowedIps: { ips: ["10.0.0.1", "10.0.0.2"] } } },
      {},
    ],
    ["an empty allow-list on a platform that shows none", { settings: { allowedIps: { ips: [] } } }, {}, {}],
    [
      "protected branches only, stated",
      { settings: { allowedIps: { ips: ["10.0.0.1"], protectedBranchesOnly: true } } },
      { settings: { allowedIps: { ips: ["10.0.0.1"] } } },
      { settings: { allowedIps: { ips: ["10.0.0.1"], protectedBranchesOnly: true } } },
    ],
    [
      "logical replication turned on",
      { settings: { enableLogicalReplication: true } },
      {},
      { settings: { enableLogicalReplication: true } },
    ],
    ["logical replication off where it is off", { settings: { enableLogicalReplication: false } }, {}, {}],
    [
      "a switch off that the platform does not show reads as off",
      { settings: { blockPublicConnections: false, blockVpcConnections: true } },
      {},
      { settings: { blockVpcConnections: true } },
    ],
    [
      "a maintenance window",
      { settings: { maintenanceWindow: { weekdays: [7, 6], startTime: "01:00", endTime: "02:00" } } },
      { settings: { maintenanceWindow: { weekdays: [6, 7], startTime: "01:00", endTime: "03:00" } } },
      { settings: { maintenanceWindow: { weekdays: [7, 6], startTime: "01:00", endTime: "02:00" } } },
    ],
    [
      "one quota, the others kept",
      { settings: { quota: { activeTimeSeconds: 3_600 } } },
      { settings: { quota: { computeTimeSeconds: 100 } } },
      { settings: { quota: { computeTimeSeconds: 100, activeTimeSeconds: 3_600 } } },
    ],
    [
      "a quota of 0 where none is shown (unlimited both)",
      { settings: { quota: { writtenDataBytes: 0 } } },
      {},
      {},
    ],
    [
      "default endpoint settings, sent whole",
      { defaultEndpointSettings: { computeUnits: { min: 0.5, max: 2 } } },
      {},
      {
        defaultEndpointSettings: {
          autoscalingLimitMinCu: 0.5,
          autoscalingLimitMaxCu: 2,
          suspendTimeoutSeconds: 0,
        },
      },
    ],
    [
      "a default Postgres setting left out is left as it is",
      { defaultEndpointSettings: { pgSettings: { a: "2" } } },
      { defaultEndpointSettings: { pgSettings: { a: "1", b: "1" } } },
      { defaultEndpointSettings: { pgSettings: { a: "2", b: "1" } } },
    ],
    [
      "default Postgres settings compared as a map",
      { defaultEndpointSettings: { pgSettings: { a: "1" }, autosuspend: "never" } },
      { defaultEndpointSettings: { pgSettings: { a: "1" }, suspendTimeoutSeconds: -1 } },
      {},
    ],
  ])("%s", (_, fields, observed, expected) => {
    expect(difference(spec(fields), project(observed))).toEqual(expected);
  });

  it("is one step that names what it changes, and warns that logical replication suspends endpoints", () => {
    const step = plan(
      spec({
        historyRetention: "1h",
        settings: { enableLogicalReplication: true, allowedIps: { ips: ["10.0.0.1"] } },
      }),
      project(),
    );
    expect(step?.message).toBe(
      "updating historyRetentionSeconds, settings.allowedIps, settings.enableLogicalReplication (turning logical replication on suspends the project's active endpoints)",
    );
    expect(plan(spec(), project())).toBeUndefined();
  });
});

describe("what no change of a project gives", () => {
  it.each<[string, Record<string, unknown>, Partial<PlatformProject>, RegExp | undefined]>([
    ["another region", { regionId: "aws-eu-central-1" }, {}, /region .* fixed at its creation/],
    ["another Postgres version", { pgVersion: 16 }, {}, /Postgres version .* fixed/],
    ["an organization the project is not in", { orgId: "org-a" }, {}, /organization \(none\)/],
    [
      "logical replication off where it is on",
      { settings: { enableLogicalReplication: false } },
      { settings: { enableLogicalReplication: true } },
      /never turns off/,
    ],
    ["the same region", { regionId: "aws-us-east-2" }, {}, undefined],
  ])("%s", (_, fields, observed, refused) => {
    const why = refusal(spec(fields), project(observed));
    if (refused) expect(why).toMatch(refused);
    else expect(why).toBeUndefined();
  });
});

describe("the create body", () => {
  it("states what the spec states, names the project and marks its default branch", () => {
    const body = createSpec(
      spec({
        regionId: "aws-us-east-2",
        pgVersion: 16,
        historyRetention: "1h",
        defaultBranch: { databaseName: "app" },
        settings: { allowedIps: { ips: ["10.0.0.1"] } },
      }),
      "tenant-acme",
      mark,
    );
    expect(body).toEqual({
      name: "tenant-acme",
      regionId: "aws-us-east-2",
      pgVersion: 16,
      historyRetentionSeconds: 3_600,
      settings: { allowedIps: { ips: ["10.0.0.1"] } },
      branch: { databaseName: "app", annotations: { "neoncloud.dev/owner": mark } },
    });
  });
});
