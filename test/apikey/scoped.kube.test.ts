// Keys that reach one project only (issue 33), tried as a team would: a namespace granted one
// project of an organization, with leave to mint keys of that project but not account-wide ones,
// gets a key that works on its project and nowhere else, revoked when its ApiKey goes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { credentialsGrant } from "../../src/api/grant.ts";
import { loadConfig } from "../../src/config.ts";
import { startOperator, type RunningOperator } from "../../src/operator.ts";
import { PlatformClient, UnauthorizedError } from "../../src/platform/index.ts";
import { startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import { applyCredentialsSecret } from "../support/credentials.ts";
import { adminKubeConfig, createNamespace, eventually, kubectl } from "../support/kube.ts";
import { namespacedUser, type NamespacedUser } from "../support/namespaced-user.ts";
import { LogCapture } from "../support/operator.ts";

const admin = "8f2a3c1e-0b1d-4a6e-9c3f-2d5e7a9b1c40";
const seed = {
  account: { kind: "organization" as const, id: "org-tenants", name: "Tenants" },
  projects: [
    { id: "proj-acme", name: "acme", branches: [] },
    { id: "proj-globex", name: "globex", branches: [] },
  ],
  accounts: [
    {
      account: {
        id: admin,
        name: "Platform Team",
        email: "platform@example.com",
        organizations: [{ id: "org-tenants", name: "Tenants", role: "admin" as const }],
      },
    },
  ],
};

let emulator: Emulator;
let operator: RunningOperator | undefined;
let ops: string;
let team: NamespacedUser;
const grant = "scoped-keys-acme";
const logs = new LogCapture();

interface Resource {
  status?: {
    keyId?: number;
    projectId?: string;
    conditions?: { type: string; status: string; reason: string; message: string }[];
  };
}
const read = async (name: string) =>
  JSON.parse(await team.kubectl(["get", "apikey", name, "-o", "json"])) as Resource;
const ready = (r: Resource) => r.status?.conditions?.find((c) => c.type === "Ready");
const until = (name: string, status: string, reason?: string) =>
  eventually(
    async () => {
      const r = await read(name);
      const c = ready(r);
      return c?.status === status && (reason === undefined || c.reason === reason) ? r : undefined;
    },
    { what: `apikey/${name} Ready=${status} ${reason ?? ""}`, timeoutMs: 60_000, intervalMs: 200 },
  );
const apiKey = (name: string, spec: object) => ({
  apiVersion: "neoncloud.dev/v1alpha1",
  kind: "ApiKey",
  metadata: { name },
  spec,
});

beforeAll(async () => {
  emulator = await startEmulator({ rateLimits: false, operationDurationMs: 150, seed });
  ops = await createNamespace("ops", { granted: false });
  // The operator acts with a personal key of the organization's admin: who may make its keys.
  await applyCredentialsSecret(ops, "neon-api-key", emulator.bootstrapKeys.get(admin) ?? "");
  const namespace = await createNamespace("acme", { granted: false });
  team = await namespacedUser("acme", { namespace });
  await kubectl(["apply", "--server-side", "-f", "-"], {
    input: JSON.stringify(
      credentialsGrant(grant, { namespaces: [namespace], projects: ["proj-acme"], mintProjectApiKeys: true }),
    ),
  });
  const config = loadConfig([
    `--platform-base-url=${emulator.url}`,
    `--namespaces=${namespace}`,
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
  await kubectl(["delete", "credentialsgrant", grant, "--wait=false"]).catch(() => undefined);
  for (const ns of [ops, team?.namespace]) {
    if (ns) await kubectl(["delete", "namespace", ns, "--wait=false"]).catch(() => undefined);
  }
});

describe("a key that reaches one project", () => {
  let key = "";

  it("is minted where the grant allows keys of the project, without the account-wide privilege", async () => {
    await team.apply(apiKey("ci", { projectId: "proj-acme" }));
    const made = await until("ci", "True");
    expect(made.status?.projectId).toBe("proj-acme");
    const secret = JSON.parse(
      await kubectl(["get", "secret", "ci-api-key", "-n", team.namespace, "-o", "json"]),
    ) as { data: Record<string, string> };
    key = Buffer.from(secret.data.apiKey ?? "", "base64").toString();
    expect(key).toMatch(/^[a-z0-9]{64}$/);
    // An account-wide key is still the privilege the grant does not give.
    await team.apply(apiKey("wide", {}));
    const refused = await until("wide", "False", "NotGranted");
    expect(ready(refused)?.message).toContain("minting API keys");
    await team.kubectl(["delete", "apikey", "wide", "--timeout=30s"]);
  });

  it("works on its project and is refused on every other, and on the account's own routes", async () => {
    const client = new PlatformClient({ baseUrl: emulator.url, apiKey: key });
    try {
      expect(await client.listEndpoints("proj-acme")).toBeDefined();
      for (const call of [
        () => client.listEndpoints("proj-globex"),
        () => client.getProject("proj-globex"),
        () => client.listApiKeys(),
        () => client.createProject({ name: "more" }),
      ]) {
        const err = await call().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect((err as { status?: number } | undefined)?.status).toBeOneOf([403, 404]);
      }
    } finally {
      await client.close();
    }
  });

  it("is revoked when its ApiKey goes", async () => {
    await team.kubectl(["delete", "apikey", "ci", "--timeout=60s"]);
    const client = new PlatformClient({ baseUrl: emulator.url, apiKey: key });
    try {
      await expect(client.listEndpoints("proj-acme")).rejects.toBeInstanceOf(UnauthorizedError);
    } finally {
      await client.close();
    }
    expect(logs.lines.join("\n")).not.toContain(key);
  });
});
