// The platform client's roles, passwords and connection URIs, against the emulator over HTTP.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPlatform, type TestPlatform } from "../../test/support/platform/platform.ts";
import type { PlatformClient } from "./client.ts";
import { PasswordNotStoredError } from "./errors.ts";

describe("the role routes of the platform client", () => {
  let platform: TestPlatform;
  let client: PlatformClient;

  beforeAll(async () => {
    platform = await startPlatform({
      operationDurationMs: 50,
      seed: {
        projects: [
          { id: "shop", name: "shop", branches: [{ id: "br-dev", name: "dev" }] },
          { id: "vault", name: "vault", store_passwords: false },
        ],
      },
    });
    client = platform.client();
  });
  afterAll(() => platform.close());

  const mainOf = async (projectId: string) =>
    (await client.listBranches(projectId)).find((b) => b.default)?.id ?? "";

  it("lists a branch's roles without their passwords", async () => {
    const main = await mainOf("shop");
    const roles = await client.listRoles("shop", main);
    expect(roles.map((r) => r.name)).toContain("neondb_owner");
    const password = await client.revealPassword("shop", main, "neondb_owner");
    expect(JSON.stringify(roles)).not.toContain(password);
    for (const role of roles) expect(Object.keys(role)).not.toContain("password");
  });

  it("reveals a password, and the connection URI carries the same one", async () => {
    const main = await mainOf("shop");
    const password = await client.revealPassword("shop", main, "neondb_owner");
    expect(password.length).toBeGreaterThan(8);
    const uri = new URL(
      await client.connectionUri("shop", {
        branchId: main,
        databaseName: "neondb",
        roleName: "neondb_owner",
      }),
    );
    expect(decodeURIComponent(uri.password)).toBe(password);
    expect(uri.username).toBe("neondb_owner");
    expect(uri.pathname).toBe("/neondb");
    const pooled = new URL(
      await client.connectionUri("shop", {
        branchId: main,
        databaseName: "neondb",
        roleName: "neondb_owner",
        pooled: true,
      }),
    );
    // The pooler: another host (the platform's `-pooler` one) or port (the emulator's Postgres).
    expect(pooled.host).not.toBe(uri.host);
    expect(decodeURIComponent(pooled.password)).toBe(password);
  });

  it("says a project stores no passwords with a typed error, from both password reads", async () => {
    const main = await mainOf("vault");
    await expect(client.revealPassword("vault", main, "neondb_owner")).rejects.toBeInstanceOf(
      PasswordNotStoredError,
    );
    await expect(
      client.connectionUri("vault", { branchId: main, databaseName: "neondb", roleName: "neondb_owner" }),
    ).rejects.toBeInstanceOf(PasswordNotStoredError);
  });

  it("resets a password: the answer carries the new one and its operations", async () => {
    const main = await mainOf("vault");
    const reset = await client.resetPassword("vault", main, "neondb_owner");
    expect(reset.role).toBe("neondb_owner");
    expect(reset.password.length).toBeGreaterThan(8);
    expect(reset.operations.map((op) => op.action)).toContain("apply_config");
    const outcome = await client.waitForOperations("vault", reset.operations, { timeoutMs: 10_000 });
    expect(outcome.state).toBe("finished");
    // The password is in no log line the client wrote.
    expect(platform.logLines.join("\n")).not.toContain(reset.password);
  });
});
