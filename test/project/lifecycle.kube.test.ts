// A user declares projects with kubectl and gets them on the platform (the emulator, over HTTP),
// kept as declared: created with their settings, changed one PATCH at a time, drift repaired,
// a retention above the plan's limit refused with the limit named, adopted by id, observed
// without a change, their default branch and endpoint adopted rather than duplicated, and deleted
// only when the spec says so.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BranchObject } from "../../src/controllers/branch/index.ts";
import type { ComputeEndpointObject } from "../../src/controllers/computeendpoint/index.ts";
import { NotFoundError } from "../../src/platform/index.ts";
import { eventually, kubectl } from "../support/kube.ts";
import { startOperatorHarness, testSeed, type OperatorHarness } from "../support/operator.ts";
import {
  branch,
  condition,
  endpoint,
  factory,
  mutation,
  project,
  requests,
  until,
  type ProjectObject,
} from "./scenario.ts";

let h: OperatorHarness;
let sent: ReturnType<typeof requests>;
/** The connection Secret's password, which no log may show. */
let password = "";
const read = (name: string) => () => h.get<ProjectObject>("project", name);
const ready = (name: string, check?: (o: ProjectObject) => boolean) =>
  until(read(name), "True", { ...(check ? { check } : {}) });
const patches = () => sent.sent((r) => r === "PATCH /projects/:project_id");
/** Look at the platform every second, so drift made outside is seen in a test's time. */
const watchful = { "neoncloud.dev/observeInterval": "1s" };

beforeAll(async () => {
  h = await startOperatorHarness(factory, {
    prefix: "proj",
    // A plan that keeps history for at most 6 h, as the platform's free tier does.
    emulator: { seed: { ...testSeed, limits: { plan: "launch", max_history_retention_seconds: 21_600 } } },
  });
  sent = requests(h.emulator);
  await h.start();
});

afterAll(async () => {
  await h?.stop();
});

/** Runs `sql` through the connection Secret `name` (its DATABASE_URL), once it exists. */
async function query<T extends object = Record<string, unknown>>(name: string, sql: string): Promise<T[]> {
  const secret = await eventually(async () => {
    const text = await kubectl([
      "get",
      "secret",
      name,
      "-n",
      h.namespace,
      "-o",
      "json",
      "--ignore-not-found",
    ]);
    return (JSON.parse(text || "null") as { data: Record<string, string> } | null) ?? undefined;
  });
  const url = Buffer.from(secret.data.DATABASE_URL ?? "", "base64").toString();
  password ||= Buffer.from(secret.data.PGPASSWORD ?? "", "base64").toString();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

describe("a Project", () => {
  it("creates the project with its settings, and publishes the default branch's connection Secret", async () => {
    await h.apply(
      project("tenant", {
        regionId: "aws-us-east-2",
        pgVersion: 16,
        historyRetention: "6h",
        defaultEndpointSettings: { computeUnits: { min: 0.25, max: 1 }, autosuspend: "10m" },
        settings: {
          // The allow-list holds loopback: the Secret is checked below by connecting from here.
          allowedIps: { ips: ["10.0.0.0/8", "127.0.0.1"] },
          maintenanceWindow: { weekdays: [6, 7], startTime: "01:00", endTime: "02:00" },
          quota: { activeTimeSeconds: 360_000 },
        },
        defaultBranch: { databaseName: "app" },
        connectionSecret: { name: "tenant-db" },
      }),
    );
    const obj = await ready("tenant");
    const id = obj.status?.projectId ?? "";
    const onPlatform = await h.platform.getProject(id);
    expect(onPlatform).toMatchObject({
      regionId: "aws-us-east-2",
      pgVersion: 16,
      historyRetentionSeconds: 21_600,
      defaultEndpointSettings: {
        autoscalingLimitMinCu: 0.25,
        autoscalingLimitMaxCu: 1,
        suspendTimeoutSeconds: 600,
      },
    });
    expect(onPlatform.settings).toMatchObject({
      allowedIps: { ips: ["10.0.0.0/8", "127.0.0.1"] },
      maintenanceWindow: { weekdays: [6, 7], startTime: "01:00", endTime: "02:00" },
      quota: { activeTimeSeconds: 360_000 },
    });
    const [defaultBranch] = (await h.platform.listBranches(id)).filter((b) => b.default);
    const [defaultEndpoint] = await h.platform.listEndpoints(id);
    expect(obj.status).toMatchObject({
      regionId: "aws-us-east-2",
      pgVersion: 16,
      proxyHost: onPlatform.proxyHost,
      defaultBranchId: defaultBranch?.id,
      defaultEndpointId: defaultEndpoint?.id,
      defaultEndpointHost: defaultEndpoint?.host,
    });
    expect(obj.status?.operations?.map((o) => [o.action, o.status])).toEqual([
      ["create_timeline", "finished"],
      ["start_compute", "finished"],
    ]);
    // One create, nothing sent twice.
    expect(sent.sent((r) => r === "POST /projects")).toEqual(["POST /projects"]);
    const table = await kubectl(["get", "project", "tenant", "-n", h.namespace]);
    expect(table).toMatch(/PROJECT\s+REGION\s+PG\s+HOST\s+READY\s+AGE/);
    expect(table).toMatch(new RegExp(`tenant\\s+${id}\\s+aws-us-east-2\\s+16\\s+\\S+\\s+True`));

    // The Secret connects, as the role and database the project was made with.
    const row = await query<{ db: string; me: string }>(
      "tenant-db",
      "select current_database() as db, current_user as me",
    );
    expect(row).toEqual([{ db: "app", me: "app_owner" }]);
  });

  it("changes allowed IPs with one PATCH, and the retention with another", async () => {
    const before = (await read("tenant")()).spec;
    sent.since();
    await h.apply(
      project("tenant", {
        ...before,
        settings: { ...before.settings, allowedIps: { ips: ["10.1.0.0/16", "192.168.0.1"] } },
      }),
    );
    const changed = await ready("tenant");
    const id = changed.status?.projectId ?? "";
    expect((await h.platform.getProject(id)).settings.allowedIps?.ips).toEqual([
      "10.1.0.0/16",
      "192.168.0.1",
    ]);
    expect(patches()).toHaveLength(1);

    sent.since();
    await h.apply(project("tenant", { ...changed.spec, historyRetention: "3h" }));
    const shorter = await ready("tenant", (o) => o.status?.historyRetentionSeconds === 10_800);
    expect(patches()).toHaveLength(1);
    expect(shorter.status?.operations?.map((o) => o.action)).toEqual(["apply_storage_config"]);
    // What the spec leaves out of the allow-list (protected branches only) and the settings it
    // does not name were not touched.
    expect((await h.platform.getProject(id)).settings.maintenanceWindow?.weekdays).toEqual([6, 7]);
  });

  it("repairs drift made behind its back with one PATCH, and leaves alone what the spec does not name", async () => {
    const obj = await read("tenant")();
    await h.apply(project("tenant", obj.spec, watchful));
    const id = obj.status?.projectId ?? "";
    sent.since();
    await h.platform.updateProject(id, {
      settings: { allowedIps: { ips: ["203.0.113.7"] }, blockVpcConnections: true },
    });
    const repaired = await eventually(
      async () => {
        const p = await h.platform.getProject(id);
        return p.settings.allowedIps?.ips?.includes("10.1.0.0/16") ? p : undefined;
      },
      { what: "the allow-list repaired" },
    );
    expect(repaired.settings.allowedIps?.ips).toEqual(["10.1.0.0/16", "192.168.0.1"]);
    // The change made outside, then the operator's one repair; the setting it does not manage stays.
    expect(patches()).toHaveLength(2);
    expect(repaired.settings.blockVpcConnections).toBe(true);
  });

  it("refuses a retention above the plan's limit with a reason naming the limit, Stalled, without hammering", async () => {
    sent.since();
    await h.apply(project("greedy", { historyRetention: "720h" }));
    const refused = await until(read("greedy"), "False", { reason: "RetentionAboveLimit" });
    expect(condition(refused, "Ready")?.message).toContain("at most 6h (21600 s)");
    expect(condition(refused, "Stalled")?.status).toBe("True");
    // A plan may be raised: it is asked again, on a backoff from seconds to a minute, not in a loop.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(sent.sent((r) => r === "POST /projects").length).toBeLessThanOrEqual(2);

    // Lowered to what the plan allows, it goes on by itself.
    await h.apply(project("greedy", { historyRetention: "6h" }));
    const created = await ready("greedy");
    expect(created.status?.historyRetentionSeconds).toBe(21_600);
    // Only one project was made of it.
    expect(await h.platform.listProjects({ search: created.status?.name ?? "" })).toHaveLength(1);
  });

  it("adopts an existing project by id, changing only what the spec names", async () => {
    const made = await h.platform.createProject({ name: "made-outside", historyRetentionSeconds: 3_600 });
    await h.platform.waitForOperations(made.project.id, made.operations, { timeoutMs: 30_000 });
    sent.since();
    await h.apply(
      project("adopted", { projectId: made.project.id, settings: { blockPublicConnections: true } }),
    );
    const obj = await ready("adopted");
    expect(obj.status).toMatchObject({
      projectId: made.project.id,
      name: "made-outside",
      defaultBranchId: made.branch.id,
      defaultEndpointId: made.endpoints[0]?.id,
      historyRetentionSeconds: 3_600,
    });
    expect(sent.sent(mutation)).toEqual(["PATCH /projects/:project_id"]);
    const onPlatform = await h.platform.getProject(made.project.id);
    expect(onPlatform.settings.blockPublicConnections).toBe(true);
    expect(onPlatform.name).toBe("made-outside");

    // At rest, once adopted, a look reads the project alone: its default branch and endpoint (and
    // the mark on that branch) were read at the adoption, and are not listed again at every look.
    await h.apply(project("adopted", obj.spec, watchful));
    sent.since();
    await new Promise((r) => setTimeout(r, 4_000));
    expect(sent.sent((r) => r.startsWith("GET /projects")).length).toBeGreaterThan(0);
    expect(sent.sent((r) => /\/(branches|endpoints)$/.test(r))).toEqual([]);
  });

  it("observe-only reports a project and sends no mutation, even where it differs from the spec", async () => {
    const id = (await read("adopted")()).status?.projectId ?? "";
    sent.since();
    await h.apply(
      project("watcher", {
        projectId: id,
        managementPolicy: "ObserveOnly",
        historyRetention: "1h",
        settings: { allowedIps: { ips: ["198.51.100.1"] } },
      }),
    );
    const obj = await until(read("watcher"), "True", { reason: "Observed" });
    expect(obj.status?.projectId).toBe(id);
    await kubectl(["delete", "project", "watcher", "-n", h.namespace, "--timeout=60s"]);
    expect(sent.sent(mutation)).toEqual([]);
    expect((await h.platform.getProject(id)).settings.allowedIps?.ips ?? []).toEqual([]);
  });

  it("has its default branch and endpoint adopted by a Branch and a ComputeEndpoint: exactly one of each", async () => {
    await h.apply(project("shop", { defaultBranch: { name: "trunk", databaseName: "shop" } }));
    const shop = await ready("shop");
    const id = shop.status?.projectId ?? "";
    sent.since();
    await h.apply(branch("trunk", { projectRef: { name: "shop", defaultBranch: true }, protected: true }));
    await h.apply(
      endpoint("trunk-rw", {
        projectRef: { name: "shop", defaultEndpoint: true },
        computeUnits: { min: 0.5, max: 2 },
      }),
    );
    const b = await until(() => h.get<BranchObject>("branch", "trunk"), "True");
    const e = await until(() => h.get<ComputeEndpointObject>("computeendpoint", "trunk-rw"), "True", {
      check: (o) => o.status?.computeUnits?.max === 2,
    });
    expect(b.status?.branchId).toBe(shop.status?.defaultBranchId);
    expect(e.status?.endpointId).toBe(shop.status?.defaultEndpointId);
    const branches = await h.platform.listBranches(id);
    const endpoints = await h.platform.listEndpoints(id);
    expect(branches.map((x) => [x.name, x.protected])).toEqual([["trunk", true]]);
    expect(endpoints.map((x) => [x.id, x.autoscalingLimitMaxCu])).toEqual([[e.status?.endpointId, 2]]);
    expect((await h.platform.listRoles(id, b.status?.branchId ?? "")).map((r) => r.name)).toEqual([
      "shop_owner",
    ]);
    expect((await h.platform.listDatabases(id, b.status?.branchId ?? "")).map((d) => d.name)).toEqual([
      "shop",
    ]);
    // Nothing was created, only the two adopted objects changed.
    expect(sent.sent((r) => r.startsWith("POST "))).toEqual([]);

    // Adopted, they stay when their resources go.
    await kubectl(["delete", "computeendpoint/trunk-rw", "branch/trunk", "-n", h.namespace, "--timeout=60s"]);
    expect((await h.platform.listEndpoints(id)).map((x) => x.id)).toEqual([e.status?.endpointId]);
    expect((await h.platform.listBranches(id)).map((x) => x.id)).toEqual([b.status?.branchId]);
  });

  it("keeps the project when its resource is deleted, unless the spec says Delete", async () => {
    const kept = (await read("tenant")()).status?.projectId ?? "";
    await h.apply(project("doomed", { deletionPolicy: "Delete" }));
    const doomed = (await ready("doomed")).status?.projectId ?? "";
    sent.since();
    await kubectl(["delete", "project", "tenant", "doomed", "-n", h.namespace, "--timeout=60s"]);
    expect((await h.platform.getProject(kept)).id).toBe(kept);
    await expect(h.platform.getProject(doomed)).rejects.toBeInstanceOf(NotFoundError);
    expect(sent.sent(mutation)).toEqual(["DELETE /projects/:project_id"]);
  });

  it("deleted and applied again (a GitOps self-heal), finds the project it kept, with its data: no second, empty one", async () => {
    const manifest = project("comeback", { connectionSecret: { name: "comeback-db" } });
    await h.apply(manifest);
    const id = (await ready("comeback")).status?.projectId ?? "";
    await query("comeback-db", "create table orders (id int); insert into orders values (42)");
    await kubectl(["delete", "project", "comeback", "-n", h.namespace, "--timeout=60s"]);
    expect((await h.platform.getProject(id)).id).toBe(id);

    sent.since();
    await h.apply(manifest);
    const again = await ready("comeback");
    expect(again.status?.projectId).toBe(id);
    expect(sent.sent((r) => r === "POST /projects")).toEqual([]);
    const events = await kubectl([
      "get",
      "events",
      "-n",
      h.namespace,
      "--field-selector",
      "involvedObject.name=comeback,reason=ProjectFound",
      "-o",
      "name",
    ]);
    expect(events.trim()).not.toBe("");
    // The app's Secret points at the kept project, data and all.
    await eventually(async () => {
      const rows = await query<{ id: number }>("comeback-db", "select id from orders").catch(() => undefined);
      return rows?.length === 1 ? rows : undefined;
    });
    expect(await query("comeback-db", "select id from orders")).toEqual([{ id: 42 }]);
  });

  it("refuses an adopted id added to a Project that created its project: the id is fixed once set", async () => {
    await h.apply(project("settled", {}));
    const made = (await ready("settled")).status?.projectId ?? "";
    const other = await h.platform.createProject({ name: "someone-elses" });
    await h.platform.waitForOperations(other.project.id, other.operations, { timeoutMs: 30_000 });
    sent.since();
    await h.apply(project("settled", { projectId: other.project.id }));
    const refused = await until(read("settled"), "False", { reason: "InvalidSpec" });
    expect(condition(refused, "Ready")?.message).toContain(
      `spec.projectId ${other.project.id} differs from project ${made}`,
    );
    expect(refused.status?.projectId).toBe(made);
    expect(sent.sent(mutation)).toEqual([]);
  });

  it("reports a project deleted outside, with how to recover it, and never makes a second one", async () => {
    await h.apply(project("fragile", {}, watchful));
    const id = (await ready("fragile")).status?.projectId ?? "";
    sent.since();
    await h.platform.deleteProject(id);
    const gone = await until(read("fragile"), "False", { reason: "ProjectDeleted" });
    expect(condition(gone, "Ready")?.message).toContain(`POST /projects/${id}/recover`);
    expect(condition(gone, "Stalled")?.status).toBe("True");
    expect(sent.sent((r) => r === "POST /projects")).toEqual([]);
  });

  it("never writes an API key or a password in its logs", () => {
    expect(password).not.toBe("");
    expect(h.logs.text()).not.toContain(password);
    expect(h.logs.text()).not.toContain(h.emulator.bootstrapKey);
  });
});
