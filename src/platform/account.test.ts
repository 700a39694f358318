// Keys of one account act in one account: the platform's lock is per project and its rate limit
// per account, whichever key sends. Against the emulator over HTTP (a project-wide lock), with
// keys met the way the operator meets them (accounts.ts).
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  asAController,
  fastRetry,
  generousLimits,
  startPlatform,
  type TestPlatform,
} from "../../test/support/platform/platform.ts";
import { Accounts } from "./accounts.ts";
import type { PlatformClient } from "./client.ts";

const LIST_ENDPOINTS = "GET /projects/:project_id/endpoints";
const LIST_OPERATIONS = "GET /projects/:project_id/operations";
const orgKey = "o".repeat(64);
const branches = ["b1", "b2", "b3", "b4", "b5", "b6"];

describe("the keys of one account", () => {
  let platform: TestPlatform;
  let accounts: Accounts;
  let first: PlatformClient;
  let second: PlatformClient;

  beforeAll(async () => {
    platform = await startPlatform({
      lockScope: "project",
      operationDurationMs: 300,
      seed: {
        projects: [
          { id: "shop", name: "shop", branches: branches.map((id) => ({ id, name: id })) },
          { id: "blog", name: "blog", branches: branches.map((id) => ({ id: `blog-${id}`, name: id })) },
        ],
        accounts: [
          {
            account: { kind: "organization", id: "org-acme-87654321", name: "Acme" },
            bootstrap_key: { name: "acme-ci", key: orgKey },
            projects: [{ id: "acme-project", name: "acme" }],
          },
        ],
      },
    });
    const another = await platform.client().createApiKey("second-key-of-the-account");
    accounts = new Accounts({
      baseUrl: platform.emulator.url,
      clientOptions: { limits: generousLimits, retry: fastRetry, pollIntervalMs: 50 },
    });
    first = await accounts.client(platform.emulator.bootstrapKey);
    second = await accounts.client(another.key);
  });
  afterAll(async () => {
    await accounts.close();
    await platform.close();
  });
  afterEach(async () => {
    // Each scenario starts on quiet projects.
    for (const project of ["shop", "blog"]) {
      const { operations } = await first.listOperationsPage(project, { limit: 100 });
      await first.waitForOperations(project, operations, { timeoutMs: 5_000 });
    }
  });

  const locked = async () => (await platform.requests(1_000)).filter((r) => r.status === 423).length;

  it("act in one account: one budget, one project per project", () => {
    expect(first).not.toBe(second);
    expect(second.account).toBe(first.account);
    expect(second.budget).toBe(first.budget);
    expect(second.project("shop")).toBe(first.project("shop"));
    expect(second.project("blog")).not.toBe(second.project("shop"));
  });

  it("take turns in the project's lock: changes sent with both keys meet no 423", async () => {
    const before = await locked();
    const created = await Promise.all(
      branches.slice(0, 4).map((branchId, i) => {
        const client = i % 2 === 0 ? first : second;
        return asAController(() =>
          client.createEndpoint("shop", { branchId, type: "read_write" }, { ticket: `ns/ce-${branchId}` }),
        );
      }),
    );
    expect(new Set(created.map((c) => c.endpoint.id)).size).toBe(4);
    expect((await locked()) - before).toBe(0);
  });

  it("clients made for the same keys on their own (as before accounts) run into the lock", async () => {
    const apart = [
      platform.client({ apiKey: platform.emulator.bootstrapKey }),
      platform.client({ apiKey: (await platform.client().createApiKey("apart")).key }),
    ];
    const before = await locked();
    const results = await Promise.allSettled(
      ["blog-b1", "blog-b2"].map((branchId, i) =>
        apart[i]!.createEndpoint("blog", { branchId, type: "read_write" }, { ticket: `ns/apart-${i}` }),
      ),
    );
    // Each key's own gate let its create go: one of the two met the other's operation.
    expect((await locked()) - before).toBeGreaterThan(0);
    expect(results.some((r) => r.status === "rejected")).toBe(true);
  });

  it("share one endpoint list of a project, kept current by either key's changes", async () => {
    const before = await platform.served(LIST_ENDPOINTS);
    const [a, b] = await Promise.all([first.snapshot("shop", { maxAgeMs: 0 }), second.snapshot("shop")]);
    expect(b).toBe(a);
    expect((await platform.served(LIST_ENDPOINTS)) - before).toBe(1);
    const created = await asAController(() =>
      first.createEndpoint("shop", { branchId: "b5", type: "read_write" }, { ticket: "ns/ce-b5" }),
    );
    // The second key's reader sees the first key's change, from its answer: no new list.
    const seen = await second.snapshot("shop", { maxAgeMs: 60_000 });
    expect(seen.map((e) => e.id)).toContain(created.endpoint.id);
    // And once its operations finish (looked at by the second key), the endpoint is active.
    expect((await second.waitForOperations("shop", created.operations, { timeoutMs: 5_000 })).state).toBe(
      "finished",
    );
    const settled = (await first.snapshot("shop", { maxAgeMs: 60_000 })).find(
      (e) => e.id === created.endpoint.id,
    );
    expect(settled?.currentState).toBe("active");
    expect((await platform.served(LIST_ENDPOINTS)) - before).toBe(1);
  });

  it("settle both keys' operations with one list, and learn their durations once", async () => {
    const endpoints = await first.listEndpoints("shop");
    const endpointOn = (branchId: string) => endpoints.find((e) => e.branchId === branchId)!.id;
    const mine = await asAController(() =>
      first.suspendEndpoint("shop", endpointOn("b1"), { ticket: "ns/suspend-b1" }),
    );
    const theirs = await asAController(() =>
      second.suspendEndpoint("shop", endpointOn("b2"), { ticket: "ns/suspend-b2" }),
    );
    // Both have ended (seen by a client of its own, which shares nothing with the account).
    const all = [...mine.operations, ...theirs.operations];
    await platform.client().waitForOperations("shop", all, { pollIntervalMs: 20, timeoutMs: 5_000 });
    const before = await platform.served(LIST_OPERATIONS);
    const outcomes = await Promise.all([
      first.waitForOperations("shop", mine.operations),
      second.waitForOperations("shop", theirs.operations),
    ]);
    expect(outcomes.map((o) => o.state)).toEqual(["finished", "finished"]);
    expect((await platform.served(LIST_OPERATIONS)) - before).toBe(1);
    // What one key's waits taught is the account's: the other knows how long a suspend takes.
    expect(second.expectedDuration([{ action: "suspend_compute" }])).toBeDefined();
    expect(second.expectedDuration([{ action: "suspend_compute" }])).toBe(
      first.expectedDuration([{ action: "suspend_compute" }]),
    );
  });

  it("do not share a list that another key was refused: each key's refusal is its own", async () => {
    const doomed = await platform.client().createApiKey("doomed-key");
    const third = await accounts.client(doomed.key);
    expect(third.account).toBe(first.account);
    await platform.client().revokeApiKey(doomed.id);
    // The revoked key opens the shared list; the other key, joining it, lists with its own.
    const [refused, listed] = await Promise.allSettled([
      third.snapshot("blog", { maxAgeMs: 0 }),
      first.snapshot("blog"),
    ]);
    expect(refused.status).toBe("rejected");
    expect(listed.status).toBe("fulfilled");
    await accounts.forget(doomed.key);
  });

  describe("and a key of another account", () => {
    it("stays apart: its own account, budget and projects", async () => {
      const other = await accounts.client(orgKey);
      expect(other.account).not.toBe(first.account);
      expect(other.budget).not.toBe(first.budget);
      expect(other.project("shop")).not.toBe(first.project("shop"));
      expect(accounts.knownAccounts).toBe(2);
      // Its reads are its own: another account's list is not shared with it.
      const before = await platform.served(LIST_ENDPOINTS);
      const [theirs, ours] = await Promise.all([
        other.snapshot("acme-project", { maxAgeMs: 0 }),
        first.snapshot("shop", { maxAgeMs: 0 }),
      ]);
      expect(theirs.every((e) => e.projectId === "acme-project")).toBe(true);
      expect(ours.every((e) => e.projectId === "shop")).toBe(true);
      expect((await platform.served(LIST_ENDPOINTS)) - before).toBe(2);
      // What the first account learned is not the other's.
      expect(other.expectedDuration([{ action: "suspend_compute" }])).toBeUndefined();
    });
  });
});
