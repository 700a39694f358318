// Which change a ComputeEndpoint sends for which difference between its spec and the platform's
// endpoint: the adapter's decisions, table by table, with no API server and no platform.
import { describe, expect, it } from "vitest";
import { ComputeEndpointSpec } from "../../api/computeendpoint.ts";
import type { Endpoint } from "../../platform/index.ts";
import { plan, type Plan } from "./plan.ts";

/** What was decided, without the words the event and condition show. */
function decision(p: Plan | undefined): object | undefined {
  if (!p) return undefined;
  const { action: _action, reason: _reason, message: _message, event: _event, ...rest } = p;
  return rest;
}

/** An endpoint as the platform reports one created with defaults and now active. */
function endpoint(fields: Partial<Endpoint> = {}): Endpoint {
  return {
    id: "ep-one",
    host: "ep-one.us-east-2.aws.neon.tech",
    projectId: "proj",
    branchId: "br-main",
    regionId: "aws-us-east-2",
    type: "read_write",
    autoscalingLimitMinCu: 1,
    autoscalingLimitMaxCu: 1,
    currentState: "active",
    pendingState: undefined,
    pgSettings: {},
    poolerEnabled: false,
    poolerMode: "transaction",
    disabled: false,
    passwordlessAccess: true,
    lastActive: undefined,
    createdAt: "2026-11-01T00:00:00Z",
    updatedAt: "2026-11-01T00:00:00Z",
    proxyHost: "us-east-2.aws.neon.tech",
    name: undefined,
    suspendTimeoutSeconds: 0,
    provisioner: undefined,
    creationSource: undefined,
    startedAt: undefined,
    suspendedAt: undefined,
    ...fields,
  };
}

const spec = (fields: Record<string, unknown> = {}) =>
  ComputeEndpointSpec.parse({ projectId: "proj", branchId: "br-main", ...fields });

describe("ComputeEndpoint: the next change", () => {
  it.each([
    ["nothing declared beyond the branch", spec(), endpoint()],
    ["a fixed size equal to the endpoint's", spec({ computeUnits: { min: 1 } }), endpoint()],
    [
      "an autosuspend of 5m on an endpoint with 300 s",
      spec({ autosuspend: "5m" }),
      endpoint({ suspendTimeoutSeconds: 300 }),
    ],
    [
      "pg settings equal in another key order",
      spec({ pgSettings: { a: "1", b: "2" } }),
      endpoint({ pgSettings: { b: "2", a: "1" } }),
    ],
    ["suspended: true on an idle endpoint", spec({ suspended: true }), endpoint({ currentState: "idle" })],
    ["an idle endpoint that autosuspended, spec silent", spec(), endpoint({ currentState: "idle" })],
    [
      "pooler settings the platform no longer reports (deprecated fields)",
      spec({ pooler: { enabled: true } }),
      endpoint({ poolerEnabled: undefined, poolerMode: undefined }),
    ],
  ])("sends nothing for %s", (_, s, e) => {
    expect(decision(plan(s, e, {}, undefined))).toBeUndefined();
  });

  it.each([
    [
      "a new fixed size (restarts)",
      spec({ computeUnits: { min: 2 } }),
      endpoint(),
      {
        change: "update",
        patch: { autoscalingLimitMinCu: 2, autoscalingLimitMaxCu: 2 },
        restarts: true,
        moves: false,
      },
    ],
    [
      "an autoscaling range",
      spec({ computeUnits: { min: 0.25, max: 2 } }),
      endpoint(),
      {
        change: "update",
        patch: { autoscalingLimitMinCu: 0.25, autoscalingLimitMaxCu: 2 },
        restarts: true,
        moves: false,
      },
    ],
    [
      "autosuspend never (no restart)",
      spec({ autosuspend: "never" }),
      endpoint(),
      { change: "update", patch: { suspendTimeoutSeconds: -1 }, restarts: false, moves: false },
    ],
    [
      "another branch (a move)",
      spec({ branchId: "br-dev" }),
      endpoint(),
      { change: "update", patch: { branchId: "br-dev" }, restarts: false, moves: true },
    ],
    [
      "the pooler switched on",
      spec({ pooler: { enabled: true } }),
      endpoint(),
      { change: "update", patch: { poolerEnabled: true }, restarts: false, moves: false },
    ],
    [
      "pg settings that differ",
      spec({ pgSettings: { work_mem: "64MB" } }),
      endpoint(),
      { change: "update", patch: { pgSettings: { work_mem: "64MB" } }, restarts: false, moves: false },
    ],
  ])("sends one PATCH of exactly the fields that differ for %s", (_, s, e, expected) => {
    expect(decision(plan(s, e, {}, undefined))).toEqual(expected);
  });

  it("starts an endpoint whose start never finished before anything else", () => {
    expect(
      decision(plan(spec({ computeUnits: { min: 2 } }), endpoint({ currentState: "init" }), {}, undefined)),
    ).toEqual({
      change: "start",
      why: "never-started",
    });
  });

  it("restarts once per new value of the restartedAt annotation", () => {
    expect(decision(plan(spec(), endpoint(), {}, "2026-11-22T10:00:00Z"))).toEqual({
      change: "restart",
      restartedAt: "2026-11-22T10:00:00Z",
    });
    expect(
      decision(plan(spec(), endpoint(), { restartedAt: "2026-11-22T10:00:00Z" }, "2026-11-22T10:00:00Z")),
    ).toBeUndefined();
  });

  it("a size change goes before a pending restart (one change per pass)", () => {
    expect(plan(spec({ computeUnits: { min: 2 } }), endpoint(), {}, "now")?.change).toBe("update");
  });

  it("suspends an active endpoint declared suspended", () => {
    expect(decision(plan(spec({ suspended: true }), endpoint(), {}, undefined))).toEqual({
      change: "suspend",
    });
  });

  it("starts an idle endpoint only when suspended changes from true to false", () => {
    expect(
      decision(
        plan(spec({ suspended: false }), endpoint({ currentState: "idle" }), { suspended: true }, undefined),
      ),
    ).toEqual({
      change: "start",
      why: "resume",
    });
    // Suspended by autosuspend, never by the spec: it wakes on the next connection by itself.
    expect(
      decision(
        plan(spec({ suspended: false }), endpoint({ currentState: "idle" }), { suspended: false }, undefined),
      ),
    ).toBeUndefined();
  });
});
