// Safe for many teams (issue 23), replayed as team members would try it: users who hold rights in
// their own namespace only (a client certificate, a RoleBinding to the operator's kinds, no Secrets),
// one operator for the cluster with one default key, granted to each namespace by a CredentialsGrant
// for the one project the teams share. What the issue found is refused now with a clear reason and
// nothing sent to the platform (its request log shows no mutation), and the other team's endpoint
// and branch are intact and connectable afterwards.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { credentialsGrant } from "../../src/api/grant.ts";
import { loadConfig } from "../../src/config.ts";
import { startOperator, type RunningOperator } from "../../src/operator.ts";
import { PlatformClient } from "../../src/platform/index.ts";
import { startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import { applyCredentialsSecret } from "../support/credentials.ts";
import { adminKubeConfig, createNamespace, eventually, kubectl } from "../support/kube.ts";
import { namespacedUser, type NamespacedUser } from "../support/namespaced-user.ts";
import { LogCapture, testSeed } from "../support/operator.ts";

interface Resource {
  metadata: { name: string; uid?: string };
  status?: {
    endpointId?: string;
    branchId?: string;
    snapshotId?: string;
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}

let emulator: Emulator;
/** The platform as the admin looks at it (reads only, besides the contest's endpoint made outside). */
let platform: PlatformClient;
let operator: RunningOperator | undefined;
let ops: string;
let teamA: NamespacedUser;
let teamB: NamespacedUser;
let ungranted: NamespacedUser;
const grants: string[] = [];
const logs = new LogCapture();

const endpoint = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: "neoncloud.dev/v1alpha1",
  kind: "ComputeEndpoint",
  metadata: { name },
  spec: { projectId: "proj-alpha", ...spec },
});
const branch = (name: string, spec: Record<string, unknown>, annotations?: Record<string, string>) => ({
  apiVersion: "neoncloud.dev/v1alpha1",
  kind: "Branch",
  metadata: { name, ...(annotations ? { annotations } : {}) },
  spec: { projectId: "proj-alpha", ...spec },
});

async function read(user: NamespacedUser, plural: string, name: string): Promise<Resource> {
  return JSON.parse(await user.kubectl(["get", plural, name, "-o", "json"])) as Resource;
}

const ready = (r: Resource) => r.status?.conditions?.find((c) => c.type === "Ready");
const stalled = (r: Resource) => r.status?.conditions?.find((c) => c.type === "Stalled");

/** The resource, as its user reads it, once its Ready condition is `status` (and `reason`). */
function until(user: NamespacedUser, plural: string, name: string, status: string, reason?: string) {
  return eventually(
    async () => {
      const r = await read(user, plural, name);
      const c = ready(r);
      return c?.status === status && (reason === undefined || c.reason === reason) ? r : undefined;
    },
    { what: `${plural}/${name} Ready=${status} ${reason ?? ""}`, timeoutMs: 60_000, intervalMs: 200 },
  );
}

/** Requests the platform answered since `mark` that change something (not GET). */
function mutationsSince(mark: number, path?: string) {
  return emulator.requestLog
    .latest()
    .slice(mark)
    .filter((e) => e.method !== "GET" && (path === undefined || e.path.includes(path)));
}

async function startTheOperator(): Promise<void> {
  const config = loadConfig([
    `--platform-base-url=${emulator.url}`,
    `--namespaces=${teamA.namespace},${teamB.namespace},${ungranted.namespace}`,
    `--default-credentials-secret=${ops}/neon-api-key`,
    `--leader-election-namespace=${ops}`,
    "--no-leader-election",
    "--metrics-address=127.0.0.1:0",
  ]);
  operator = await startOperator(config, logs.logger, { kubeConfig: adminKubeConfig(), pollIntervalMs: 100 });
}

beforeAll(async () => {
  emulator = await startEmulator({ rateLimits: false, operationDurationMs: 150, seed: testSeed });
  platform = new PlatformClient({ baseUrl: emulator.url, apiKey: emulator.bootstrapKey });
  // The operator's namespace and its key, which no team can read.
  ops = await createNamespace("ops", { granted: false });
  await applyCredentialsSecret(ops, "neon-api-key", emulator.bootstrapKey);
  const namespaces = await Promise.all(
    ["team-a", "team-b", "team-c"].map((p) => createNamespace(p, { granted: false })),
  );
  const users = await Promise.all(
    ["team-a", "team-b", "team-c"].map((p, i) => namespacedUser(p, { namespace: namespaces[i] ?? "" })),
  );
  [teamA, teamB, ungranted] = users as [NamespacedUser, NamespacedUser, NamespacedUser];
  // The platform team grants the shared project to team-a and team-b; team-c gets nothing, and
  // no team may mint keys.
  for (const user of [teamA, teamB]) {
    const name = `${user.namespace}-alpha`;
    await kubectl(["apply", "--server-side", "-f", "-"], {
      input: JSON.stringify(
        credentialsGrant(name, { namespaces: [user.namespace], projects: ["proj-alpha"] }),
      ),
    });
    grants.push(name);
  }
  await startTheOperator();
});

afterAll(async () => {
  await operator?.stop();
  await platform?.close();
  await emulator?.close();
  for (const name of grants)
    await kubectl(["delete", "credentialsgrant", name, "--wait=false"]).catch(() => undefined);
  for (const ns of [ops, teamA?.namespace, teamB?.namespace, ungranted?.namespace]) {
    if (ns) await kubectl(["delete", "namespace", ns, "--wait=false"]).catch(() => undefined);
  }
});

describe("safe for many teams", () => {
  it("team-a's endpoint and branch work on the default key its namespace was granted", async () => {
    await teamA.apply(branch("staging", { name: "shop-staging", parent: { branchId: "br-dev" } }));
    const b = await until(teamA, "branch", "staging", "True");
    await teamA.apply(
      endpoint("shop-staging", {
        branchRef: { name: "staging" },
        connectionSecret: { name: "shop-db", role: "neondb_owner", database: "neondb" },
      }),
    );
    const e = await until(teamA, "computeendpoint", "shop-staging", "True");
    expect(e.status?.endpointId).toBeDefined();
    expect(b.status?.branchId).toBeDefined();
  });

  it("team-b cannot take over team-a's endpoint by its id: refused, nothing sent, and deleting its resource leaves the endpoint", async () => {
    const theirs = await read(teamA, "computeendpoint", "shop-staging");
    const id = theirs.status?.endpointId ?? "";
    const before = emulator.requestLog.latest().length;
    await teamB.apply(endpoint("grab", { branchId: "br-staging", endpointId: id, computeUnits: { min: 4 } }));
    const refused = await until(teamB, "computeendpoint", "grab", "False", "AlreadyManaged");
    expect(stalled(refused)?.status).toBe("True");
    // It says another namespace holds it, and names nothing of it.
    expect(ready(refused)?.message).toContain("a resource in another namespace");
    expect(ready(refused)?.message).not.toContain(teamA.namespace);
    expect(refused.status?.endpointId).toBeUndefined();
    // Deleting it, even with deletionPolicy Delete spelled out, sends nothing.
    await teamB.kubectl([
      "patch",
      "computeendpoint",
      "grab",
      "--type=merge",
      "-p",
      '{"spec":{"deletionPolicy":"Delete"}}',
    ]);
    await teamB.kubectl(["delete", "computeendpoint", "grab", "--timeout=60s"]);
    expect(mutationsSince(before, id)).toEqual([]);
    const still = (await platform.listEndpoints("proj-alpha")).find((e) => e.id === id);
    expect(still?.autoscalingLimitMinCu).toBe(1);
  });

  it("team-b cannot take over an endpoint team-a's Branch made in its create, by its id", async () => {
    await teamA.apply(endpoint("preview-db", { branchRef: { name: "preview" } }));
    await until(teamA, "computeendpoint", "preview-db", "False", "WaitingForReference");
    await teamA.apply(branch("preview", { parent: { branchId: "br-dev" } }));
    const b = await until(teamA, "branch", "preview", "True");
    const theirs = await until(teamA, "computeendpoint", "preview-db", "True");
    const id = theirs.status?.endpointId ?? "";
    const onPlatform = async () => (await platform.listEndpoints("proj-alpha")).find((e) => e.id === id);
    // Made with the branch: no name of its own; its owner mark is on the branch.
    expect(await onPlatform()).toMatchObject({ branchId: b.status?.branchId, name: undefined });
    const before = emulator.requestLog.latest().length;
    await teamB.apply(
      endpoint("grab-preview", { branchId: b.status?.branchId, endpointId: id, computeUnits: { min: 4 } }),
    );
    // Its branch is team-a's too: refused as a use of it, or as a takeover; either way nothing is sent.
    const refused = await until(teamB, "computeendpoint", "grab-preview", "False");
    expect(["AlreadyManaged", "NotShared"]).toContain(ready(refused)?.reason);
    expect(ready(refused)?.message).toMatch(
      /a resource in another namespace|held by a resource in another namespace/,
    );
    await teamB.kubectl(["delete", "computeendpoint", "grab-preview", "--timeout=60s"]);
    expect(mutationsSince(before, id)).toEqual([]);
    expect((await onPlatform())?.autoscalingLimitMinCu).toBe(1);
  });

  it("team-b cannot take over team-a's branch by its name, nor reset it", async () => {
    const theirs = await read(teamA, "branch", "staging");
    const before = emulator.requestLog.latest().length;
    await teamB.apply(
      branch(
        "staging",
        { name: "shop-staging", roles: [{ name: "intruder" }] },
        { "neoncloud.dev/restoredFromParentAt": "2026-11-25T00:00:00Z" },
      ),
    );
    const refused = await until(teamB, "branch", "staging", "False");
    expect(["AlreadyManaged", "BranchNameTaken"]).toContain(ready(refused)?.reason);
    expect(stalled(refused)?.status).toBe("True");
    expect(refused.status?.branchId).toBeUndefined();
    await teamB.kubectl(["delete", "branch", "staging", "--timeout=60s"]);
    expect(mutationsSince(before, theirs.status?.branchId ?? "")).toEqual([]);
    expect(mutationsSince(before).filter((e) => e.path.endsWith("/branches"))).toEqual([]);
  });

  it("minting an API key on the default credentials is refused where the grant does not allow it", async () => {
    const before = emulator.requestLog.latest().length;
    await teamB.apply({
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "ApiKey",
      metadata: { name: "mine" },
      spec: {},
    });
    const refused = await until(teamB, "apikey", "mine", "False", "NotGranted");
    expect(ready(refused)?.message).toContain("mint");
    expect(mutationsSince(before, "/api_keys")).toEqual([]);
    await teamB.kubectl(["delete", "apikey", "mine", "--timeout=60s"]);
  });

  it("an ungranted namespace gets a reason naming what is missing and who can grant it, and sends nothing", async () => {
    const before = emulator.requestLog.latest().length;
    await ungranted.apply(endpoint("db", { branchId: "br-feature" }));
    const refused = await until(ungranted, "computeendpoint", "db", "False", "NotGranted");
    expect(ready(refused)?.message).toContain("CredentialsGrant");
    expect(ready(refused)?.message).toContain("spec.credentials");
    expect(mutationsSince(before)).toEqual([]);
    await ungranted.kubectl(["delete", "computeendpoint", "db", "--timeout=60s"]);
  });

  it("afterwards team-a's endpoint and branch are intact and connectable", async () => {
    const e = await until(teamA, "computeendpoint", "shop-staging", "True");
    const b = await until(teamA, "branch", "staging", "True");
    expect((await platform.listBranches("proj-alpha")).map((x) => x.id)).toContain(b.status?.branchId);
    const secret = JSON.parse(
      await kubectl(["get", "secret", "shop-db", "-n", teamA.namespace, "-o", "json"]),
    ) as { data: Record<string, string> };
    const client = new pg.Client({
      connectionString: Buffer.from(secret.data.DATABASE_URL ?? "", "base64").toString(),
    });
    await client.connect();
    try {
      expect((await client.query<{ one: number }>("select 1 as one")).rows[0]?.one).toBe(1);
    } finally {
      await client.end();
    }
    expect(e.status?.endpointId).toBeDefined();
  });
});

describe("a claim contest: two namespaces naming the same endpoint", () => {
  let made: string;
  beforeAll(async () => {
    made = (await platform.createEndpoint("proj-alpha", { branchId: "br-feature", type: "read_write" }))
      .endpoint.id;
  });

  it.each([
    ["team-a first", () => teamA, () => teamB],
    ["team-b first", () => teamB, () => teamA],
  ])(
    "%s: exactly one manages it, across an operator restart; deleting the other leaves it",
    async (_, first, second) => {
      await first().apply(endpoint("contested", { branchId: "br-feature", endpointId: made }));
      await until(first(), "computeendpoint", "contested", "True");
      await second().apply(endpoint("contested", { branchId: "br-feature", endpointId: made }));
      await until(second(), "computeendpoint", "contested", "False", "AlreadyManaged");
      // A new operator process knows only what the cluster and the platform say.
      await operator?.stop();
      await startTheOperator();
      await second().kubectl([
        "annotate",
        "computeendpoint",
        "contested",
        `poke=${Date.now()}`,
        "--overwrite",
      ]);
      await until(second(), "computeendpoint", "contested", "False", "AlreadyManaged");
      await until(first(), "computeendpoint", "contested", "True");
      const before = emulator.requestLog.latest().length;
      await second().kubectl([
        "patch",
        "computeendpoint",
        "contested",
        "--type=merge",
        "-p",
        '{"spec":{"deletionPolicy":"Delete"}}',
      ]);
      await second().kubectl(["delete", "computeendpoint", "contested", "--timeout=60s"]);
      expect(mutationsSince(before, made)).toEqual([]);
      // The winner adopted it: it is kept when its resource goes (an adopted object is deleted only when the spec says Delete).
      await first().kubectl(["delete", "computeendpoint", "contested", "--timeout=60s"]);
      expect((await platform.listEndpoints("proj-alpha")).map((e) => e.id)).toContain(made);
    },
  );
});

describe("held means held, for reading too: another team's objects are used only with its consent", () => {
  /** GET requests since `mark` whose path has `part` (a connection_uri read, say). */
  const readsSince = (mark: number, part: string) =>
    emulator.requestLog
      .latest()
      .slice(mark)
      .filter((e) => e.method === "GET" && e.path.includes(part));
  const secretIn = async (namespace: string, name: string) =>
    (await kubectl(["get", "secret", name, "-n", namespace, "--ignore-not-found", "-o", "name"])).trim();
  /** team-a's consent on its resource, given or withdrawn by team-a's own user. */
  const share = (plural: string, name: string, sharedWith: unknown[] | null) =>
    teamA.kubectl(["patch", plural, name, "--type=merge", "-p", JSON.stringify({ spec: { sharedWith } })]);

  it("observe-only of team-a's endpoint is refused, reading no password; with team-a's consent it is observed, and withdrawn the Secret goes", async () => {
    const theirs = await until(teamA, "computeendpoint", "shop-staging", "True");
    const id = theirs.status?.endpointId ?? "";
    const before = emulator.requestLog.latest().length;
    await teamB.apply(
      endpoint("peek", {
        branchId: theirs.status?.branchId,
        endpointId: id,
        managementPolicy: "ObserveOnly",
        connectionSecret: { name: "peek-db", role: "neondb_owner", database: "neondb" },
      }),
    );
    const refused = await until(teamB, "computeendpoint", "peek", "False", "NotShared");
    expect(ready(refused)?.message).toContain("spec.sharedWith");
    expect(ready(refused)?.message).not.toContain(teamA.namespace);
    expect(refused.status?.endpointId).toBeUndefined();
    expect(readsSince(before, "connection_uri")).toEqual([]);
    expect(await secretIn(teamB.namespace, "peek-db")).toBe("");

    await share("computeendpoint", "shop-staging", [{ namespace: teamB.namespace, uses: ["Observe"] }]);
    await until(teamB, "computeendpoint", "peek", "True", "Observed");
    await eventually(async () => ((await secretIn(teamB.namespace, "peek-db")) === "" ? undefined : true));

    await share("computeendpoint", "shop-staging", null);
    await until(teamB, "computeendpoint", "peek", "False", "NotShared");
    await eventually(async () => ((await secretIn(teamB.namespace, "peek-db")) === "" ? true : undefined));
    await teamB.kubectl(["delete", "computeendpoint", "peek", "--timeout=60s"]);
  });

  it("observe-only of a project team-a's Project holds is refused; with its consent it is observed", async () => {
    const project = (name: string, spec: Record<string, unknown>) => ({
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "Project",
      metadata: { name },
      spec: { projectId: "proj-alpha", ...spec },
    });
    await teamA.apply(project("alpha", {}));
    await until(teamA, "project", "alpha", "True");
    const before = emulator.requestLog.latest().length;
    await teamB.apply(
      project("alpha-watch", { managementPolicy: "ObserveOnly", connectionSecret: { name: "alpha-db" } }),
    );
    const refused = await until(teamB, "project", "alpha-watch", "False", "NotShared");
    expect(ready(refused)?.message).not.toContain(teamA.namespace);
    expect(readsSince(before, "connection_uri")).toEqual([]);
    expect(await secretIn(teamB.namespace, "alpha-db")).toBe("");
    await share("project", "alpha", [{ namespace: teamB.namespace, uses: ["Observe"] }]);
    await until(teamB, "project", "alpha-watch", "True", "Observed");
    await teamB.kubectl(["delete", "project", "alpha-watch", "--timeout=60s"]);
    await teamA.kubectl(["delete", "project", "alpha", "--timeout=60s"]);
  });

  it("an endpoint on team-a's branch and a branch copied from it are refused without consent, nothing sent; with it they are made", async () => {
    const staging = await until(teamA, "branch", "staging", "True");
    const branchId = staging.status?.branchId ?? "";
    const before = emulator.requestLog.latest().length;
    await teamB.apply(endpoint("replica", { branchId, type: "read_only" }));
    await teamB.apply(branch("copy", { parent: { branchId } }));
    for (const [plural, name] of [
      ["computeendpoint", "replica"],
      ["branch", "copy"],
    ] as const) {
      const refused = await until(teamB, plural, name, "False", "NotShared");
      expect(stalled(refused)?.status).toBe("True");
      expect(ready(refused)?.message).not.toContain(teamA.namespace);
    }
    expect(mutationsSince(before)).toEqual([]);

    await share("branch", "staging", [{ namespace: teamB.namespace, uses: ["Attach", "Derive"] }]);
    const replica = await until(teamB, "computeendpoint", "replica", "True");
    const copy = await until(teamB, "branch", "copy", "True");
    expect(replica.status?.branchId).toBe(branchId);
    const made = (await platform.listBranches("proj-alpha")).find((b) => b.id === copy.status?.branchId);
    expect(made?.parentId).toBe(branchId);
    await teamB.kubectl(["delete", "computeendpoint", "replica", "--timeout=60s"]);
    await teamB.kubectl(["delete", "branch", "copy", "--timeout=60s"]);
    await share("branch", "staging", null);
  });

  it("a branch restored from team-a's snapshot is refused without consent, nothing sent; with it it is made", async () => {
    const main = (await platform.listBranches("proj-alpha")).find((b) => b.default)?.id ?? "";
    await teamA.apply({
      apiVersion: "neoncloud.dev/v1alpha1",
      kind: "Snapshot",
      metadata: { name: "nightly" },
      spec: { projectId: "proj-alpha", branchId: main, ttl: "24h" },
    });
    const { snapshotId } = (await until(teamA, "snapshot", "nightly", "True")).status ?? {};
    const before = emulator.requestLog.latest().length;
    await teamB.apply(branch("restored", { parent: { snapshotId } }));
    const refused = await until(teamB, "branch", "restored", "False", "NotShared");
    expect(ready(refused)?.message).not.toContain(teamA.namespace);
    expect(mutationsSince(before)).toEqual([]);

    await share("snapshot", "nightly", [{ namespace: teamB.namespace, uses: ["Derive"] }]);
    const restored = await until(teamB, "branch", "restored", "True");
    expect(restored.status?.branchId).toBeDefined();
    await teamB.kubectl(["delete", "branch", "restored", "--timeout=60s"]);
    await teamA.kubectl(["delete", "snapshot", "nightly", "--timeout=60s"]);
    expect((await platform.listSnapshots("proj-alpha")).map((s) => s.id)).not.toContain(snapshotId);
  });

  it("a second read-write endpoint on a shared branch is refused in words that name no other namespace", async () => {
    const staging = await until(teamA, "branch", "staging", "True");
    await share("branch", "staging", [{ namespace: teamB.namespace }]);
    await teamB.apply(endpoint("second", { branchId: staging.status?.branchId }));
    const refused = await until(teamB, "computeendpoint", "second", "False", "BranchHasReadWriteEndpoint");
    expect(ready(refused)?.message).toContain("a resource in another namespace");
    expect(ready(refused)?.message).not.toContain(teamA.namespace);
    expect(ready(refused)?.message).not.toContain("shop-staging");
    await teamB.kubectl(["delete", "computeendpoint", "second", "--timeout=60s"]);
    await share("branch", "staging", null);
  });

  it("a resource refused before it made anything (its credentials Secret missing) is deleted at once, its finalizer untouched by hand", async () => {
    await teamB.apply(endpoint("keyless", { branchId: "br-feature", credentials: { secretName: "nope" } }));
    await until(teamB, "computeendpoint", "keyless", "False", "CredentialsNotFound");
    await teamB.kubectl(["delete", "computeendpoint", "keyless", "--timeout=30s"]);
    expect(
      await teamB.kubectl(["get", "computeendpoint", "keyless", "--ignore-not-found", "-o", "name"]),
    ).toBe("");
  });
});
