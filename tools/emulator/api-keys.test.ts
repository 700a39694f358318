// API keys and authentication, as a client of the platform sees them.
import { describe, expect, it } from "vitest";
import { startHarness } from "../../test/emulator/harness.ts";

describe("API keys", () => {
  it("a created key is 64 lowercase alphanumeric characters, works at once, and is listed without its value", async () => {
    const h = await startHarness();
    const created = await h.api("POST", "/api_keys", { key_name: "ci" });
    expect(created.status).toBe(200);
    expect(created.body.key).toMatch(/^[a-z0-9]{64}$/);
    expect(created.body).toMatchObject({
      id: expect.any(Number),
      name: "ci",
      created_by: expect.any(String),
    });
    const list = await h.api("GET", "/api_keys", undefined, { key: created.body.key });
    expect(list.status).toBe(200);
    expect(list.body.map((k: { name: string }) => k.name)).toEqual(["bootstrap", "ci"]);
    expect(JSON.stringify(list.body)).not.toContain(created.body.key);
    expect(JSON.stringify(list.body)).not.toContain(h.emulator.bootstrapKey);
  });

  it("a revoked key makes every request fail with 401", async () => {
    const h = await startHarness();
    const { body: key } = await h.api("POST", "/api_keys", { key_name: "temporary" });
    const revoked = await h.api("DELETE", `/api_keys/${key.id}`);
    expect(revoked.body).toMatchObject({ id: key.id, name: "temporary", revoked: true });
    for (const [method, path] of [
      ["GET", "/projects"],
      ["GET", "/api_keys"],
      ["GET", "/projects/demo-project/endpoints"],
      ["POST", "/api_keys"],
    ] as const) {
      const res = await h.api(method, path, method === "POST" ? { key_name: "x" } : undefined, {
        key: key.key,
      });
      expect(res.status).toBe(401);
    }
    const names = (await h.api("GET", "/api_keys")).body.map((k: { name: string }) => k.name);
    expect(names).not.toContain("temporary");
    expect((await h.api("DELETE", `/api_keys/${key.id}`)).status).toBe(404);
  });

  it("a missing or unknown key gets 401 with the error body, echoing X-Request-ID", async () => {
    const h = await startHarness();
    const missing = await h.api("GET", "/projects", undefined, {
      key: null,
      headers: { "x-request-id": "req-123" },
    });
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({ code: "", message: expect.any(String), request_id: "req-123" });
    const unknown = await h.api("GET", "/projects", undefined, { key: "a".repeat(64) });
    expect(unknown.status).toBe(401);
    expect(JSON.stringify(unknown.body)).not.toContain("a".repeat(64));
  });

  it("every successful call records when and from where the key was last used", async () => {
    const h = await startHarness();
    await h.api("GET", "/projects");
    const before = (await h.api("GET", "/api_keys")).body;
    expect(before[0].last_used_at).toEqual(expect.any(String));
    h.clock.advance(60_000);
    await h.api("GET", "/projects");
    const after = (await h.api("GET", "/api_keys")).body;
    expect(after[0].last_used_from_addr).toBe("127.0.0.1");
    expect(Date.parse(after[0].last_used_at)).toBeGreaterThan(Date.parse(before[0].last_used_at));
  });

  it("a new key has never been used", async () => {
    const h = await startHarness();
    await h.api("POST", "/api_keys", { key_name: "fresh" });
    const fresh = (await h.api("GET", "/api_keys")).body.find((k: { name: string }) => k.name === "fresh");
    expect(fresh).toMatchObject({ last_used_at: null, last_used_from_addr: "" });
  });

  it("a key name longer than 64 characters and a non-integer key id are refused with 400", async () => {
    const h = await startHarness();
    expect((await h.api("POST", "/api_keys", { key_name: "x".repeat(65) })).status).toBe(400);
    expect((await h.api("DELETE", "/api_keys/abc")).status).toBe(400);
  });
});
