// Platform accounts as the operator meets them through keys, against the emulator over HTTP: keys
// of one account spend one rate budget (the platform's limit is per account), a refused key is
// not kept, and a key's client closes once nothing uses it (a rotated key leaves nothing behind).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UnauthorizedError } from "./errors.ts";
import {
  fastRetry,
  generousLimits,
  startPlatform,
  type TestPlatform,
} from "../../test/support/platform/platform.ts";
import { Accounts } from "./accounts.ts";

let platform: TestPlatform;
let accounts: Accounts;

beforeAll(async () => {
  platform = await startPlatform();
  accounts = new Accounts({
    baseUrl: platform.emulator.url,
    clientOptions: { limits: generousLimits, retry: fastRetry },
    idleMs: 60_000,
  });
});

afterAll(async () => {
  await accounts.close();
  await platform.close();
});

describe("accounts", () => {
  it("gives the keys of one account one rate budget, asking the platform whose each key is", async () => {
    const second = await platform.client().createApiKey("second-key");
    const a = await accounts.client(platform.emulator.bootstrapKey);
    const b = await accounts.client(second.key);
    expect(a).not.toBe(b);
    expect(a.budget).toBe(b.budget);
    expect(accounts.knownAccounts).toBe(1);
    expect(await accounts.client(platform.emulator.bootstrapKey)).toBe(a);
    expect(await platform.served("GET /auth")).toBe(2);
  });

  it("asks nothing about a lone key: its first request is its own (a restart costs no GET /auth)", async () => {
    const alone = new Accounts({
      baseUrl: platform.emulator.url,
      clientOptions: { limits: generousLimits, retry: fastRetry },
    });
    try {
      const before = await platform.served("GET /auth");
      const client = await alone.client(platform.emulator.bootstrapKey);
      await client.listApiKeys();
      expect(await platform.served("GET /auth")).toBe(before);
      // A second key may share the account: now both are asked, and they share its budget.
      const second = await platform.client().createApiKey("second-of-a-lone-key");
      const other = await alone.client(second.key);
      expect(other.budget).toBe(client.budget);
      expect(await platform.served("GET /auth")).toBe(before + 2);
    } finally {
      await alone.close();
    }
  });

  it("asks about a lone key once it has been revoked, not again with every new key", async () => {
    const alone = new Accounts({
      baseUrl: platform.emulator.url,
      clientOptions: { limits: generousLimits, retry: fastRetry },
    });
    try {
      const first = await platform.client().createApiKey("first-then-revoked");
      await alone.client(first.key);
      await platform.client().revokeApiKey(first.id);
      const before = await platform.served("GET /auth");
      const second = await platform.client().createApiKey("second-after-a-revoked-one");
      await alone.client(second.key);
      expect(await platform.served("GET /auth")).toBe(before + 2); // the new key and the revoked one
      const third = await platform.client().createApiKey("third-after-a-revoked-one");
      await alone.client(third.key);
      expect(await platform.served("GET /auth")).toBe(before + 3); // only the new key
    } finally {
      await alone.close();
    }
  });

  it("does not keep the client of a key the platform refuses", async () => {
    await expect(accounts.client("not-a-key")).rejects.toBeInstanceOf(UnauthorizedError);
    const before = accounts.openClients;
    await expect(accounts.client("not-a-key")).rejects.toBeInstanceOf(UnauthorizedError);
    expect(accounts.openClients).toBe(before);
  });

  it("closes the client of a key nothing used for the idle time", async () => {
    const rotated = await platform.client().createApiKey("rotated-away");
    await accounts.client(rotated.key);
    const open = accounts.openClients;
    // Every other key was used just now; only a sweep far enough ahead finds them all idle.
    expect(await accounts.sweep(Date.now() + 59_000)).toBe(0);
    expect(await accounts.sweep(Date.now() + 60_000)).toBe(open);
    expect(accounts.openClients).toBe(0);
  });
});
