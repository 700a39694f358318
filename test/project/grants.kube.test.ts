// A namespace may create projects with the operator's default credentials only where a
// CredentialsGrant says createProjects, and a project its Project made is its own: usable by its
// Branches and ComputeEndpoints without a grant naming it, and by no other namespace. Driven as
// team members would, with rights in their own namespace only (a client certificate, a RoleBinding
// to the operator's kinds, status included: a status written by hand grants nothing).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { credentialsGrant } from "../../src/api/grant.ts";
import { loadConfig } from "../../src/config.ts";
import { startOperator, type RunningOperator } from "../../src/operator.ts";
import { startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import { applyCredentialsSecret } from "../support/credentials.ts";
import { adminKubeConfig, createNamespace, kubectl } from "../support/kube.ts";
import { namespacedUser, type NamespacedUser } from "../support/namespaced-user.ts";
import { LogCapture, testSeed } from "../support/operator.ts";
import {
  branch,
  condition,
  endpoint,
  mutation,
  project,
  requests,
  until,
  type ProjectObject,
} from "./scenario.ts";

let emulator: Emulator;
let operator: RunningOperator | undefined;
let sent: ReturnType<typeof requests>;
let ops: string;
let teamA: NamespacedUser;
let teamB: NamespacedUser;
let ungranted: NamespacedUser;
const grants: string[] = [];
const logs = new LogCapture();

const read = (user: NamespacedUser, plural: string, name: string) => async () =>
  JSON.parse(await user.kubectl(["get", plural, name, "-o", "json"])) as ProjectObject;

beforeAll(async () => {
  emulator = await startEmulator({ rateLimits: false, operationDurationMs: 150, seed: testSeed });
  sent = requests(emulator);
  ops = await createNamespace("ops", { granted: false });
  await applyCredentialsSecret(ops, "neon-api-key", emulator.bootstrapKey);
  const namespaces = await Promise.all(
    ["proj-team-a", "proj-team-b", "proj-team-c"].map((p) => createNamespace(p, { granted: false })),
  );
  [teamA, teamB, ungranted] = (await Promise.all(
    namespaces.map((namespace) => namespacedUser(namespace.replace(/-[0-9a-f]+$/, ""), { namespace })),
  )) as [NamespacedUser, NamespacedUser, NamespacedUser];
  // team-a and team-b may create projects (and no existing project is granted to them); team-c
  // is granted nothing.
  for (const user of [teamA, teamB]) {
    const name = `${user.namespace}-projects`;
    await kubectl(["apply", "--server-side", "-f", "-"], {
      input: JSON.stringify(credentialsGrant(name, { namespaces: [user.namespace], createProjects: true })),
    });
    grants.push(name);
  }
  const config = loadConfig([
    `--platform-base-url=${emulator.url}`,
    `--namespaces=${[teamA, teamB, ungranted].map((u) => u.namespace).join(",")}`,
    `--default-credentials-secret=${ops}/neon-api-key`,
    `--leader-election-namespace=${ops}`,
    "--no-leader-election",
    "--metrics-address=127.0.0.1:0",
  ]);
  operator = await startOperator(config, logs.logger, { kubeConfig: adminKubeConfig(), pollIntervalMs: 100 });
});

afterAll(async () => {
  await operator?.stop();
  await emulator?.close();
  for (const name of grants)
    await kubectl(["delete", "credentialsgrant", name, "--wait=false"]).catch(() => undefined);
  for (const ns of [ops, teamA?.namespace, teamB?.namespace, ungranted?.namespace]) {
    if (ns) await kubectl(["delete", "namespace", ns, "--wait=false"]).catch(() => undefined);
  }
});

describe("projects on the operator's default credentials", () => {
  let made = "";

  it("team-a creates a project where its grant allows it, and its Branches and ComputeEndpoints use it", async () => {
    await teamA.apply(project("tenant", { connectionSecret: { name: "tenant-db" } }));
    const tenant = await until(read(teamA, "project", "tenant"), "True");
    made = tenant.status?.projectId ?? "";
    // The defaults adopted, a new branch by reference, and one naming the project by its id: the
    // grant names no project, the project is team-a's own.
    await teamA.apply(branch("trunk", { projectRef: { name: "tenant", defaultBranch: true } }));
    await teamA.apply(endpoint("trunk-rw", { projectRef: { name: "tenant", defaultEndpoint: true } }));
    await teamA.apply(branch("preview", { projectRef: { name: "tenant" } }));
    await teamA.apply(
      branch("by-id", { projectId: made, parent: { branchId: tenant.status?.defaultBranchId } }),
    );
    for (const [plural, name] of [
      ["branch", "trunk"],
      ["computeendpoint", "trunk-rw"],
      ["branch", "preview"],
      ["branch", "by-id"],
    ] as const) {
      await until(read(teamA, plural, name), "True");
    }
  });

  it("an ungranted namespace may not create projects: NotGranted, nothing sent", async () => {
    sent.since();
    await ungranted.apply(project("tenant"));
    const refused = await until(read(ungranted, "project", "tenant"), "False", { reason: "NotGranted" });
    expect(condition(refused, "Ready")?.message).toContain("for creating projects");
    expect(condition(refused, "Ready")?.message).toContain("CredentialsGrant");
    expect(condition(refused, "Stalled")?.status).toBe("True");
    await ungranted.kubectl(["delete", "project", "tenant", "--timeout=60s"]);
    expect(sent.sent(mutation)).toEqual([]);
  });

  it("team-b cannot use team-a's project by its id, nor by a status written by hand", async () => {
    sent.since();
    await teamB.apply(branch("intruder", { projectId: made }));
    const refused = await until(read(teamB, "branch", "intruder"), "False", { reason: "NotGranted" });
    expect(condition(refused, "Ready")?.message).toContain(`for project ${made}`);
    expect(condition(refused, "Ready")?.message).not.toContain(teamA.namespace);

    // A Project of team-b's own, its status then made to claim team-a's project.
    await teamB.apply(project("forged"));
    await until(read(teamB, "project", "forged"), "True");
    await teamB.kubectl([
      "patch",
      "project",
      "forged",
      "--subresource=status",
      "--type=merge",
      "-p",
      JSON.stringify({ status: { projectId: made } }),
    ]);
    for (const what of ["project/forged", "branch/intruder"])
      await teamB.kubectl(["annotate", what, `poke=${Date.now()}`, "--overwrite"]);
    await until(read(teamB, "project", "forged"), "False", { reason: "AlreadyManaged" });
    const still = await until(read(teamB, "branch", "intruder"), "False", { reason: "NotGranted" });
    expect(condition(still, "Stalled")?.status).toBe("True");
    // Nothing was sent to team-a's project (team-b's own project was created).
    expect(sent.sent(mutation)).toEqual(["POST /projects"]);
    await teamB.kubectl(["delete", "branch/intruder", "project/forged", "--timeout=60s"]);
    expect(sent.sent(mutation)).toEqual(["POST /projects"]);
  });

  it("afterwards team-a's project and everything in it are as they were", async () => {
    await until(read(teamA, "project", "tenant"), "True");
    await until(read(teamA, "computeendpoint", "trunk-rw"), "True");
  });
});
