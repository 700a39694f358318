// Bad input: malformed JSON, wrong types, out-of-range values and oversize
// bodies get the platform's error status and body, and change nothing.
import { describe, expect, it } from "vitest";
import { branchesOf, startHarness, type Harness } from "../../test/emulator/harness.ts";

const P = "/projects/demo-project";

async function worldSnapshot(h: Harness) {
  return {
    endpoints: (await h.api("GET", `${P}/endpoints`)).body,
    operations: (await h.api("GET", `${P}/operations?limit=1000`)).body.operations,
    keys: (await h.api("GET", "/api_keys")).body.map((k: { id: number }) => k.id),
  };
}

describe("bad input", () => {
  it("is refused with the error body and leaves the world unchanged", async () => {
    const h = await startHarness({ maxBodyBytes: 4096 });
    const { dev } = await branchesOf(h);
    const [seeded] = (await h.api("GET", `${P}/endpoints`)).body.endpoints;
    const before = await worldSnapshot(h);
    const cases: [string, string, unknown, number, string?][] = [
      ["POST", `${P}/endpoints`, undefined, 400, "{not json"],
      ["POST", `${P}/endpoints`, [], 400],
      ["POST", `${P}/endpoints`, { endpoint: { branch_id: dev } }, 400],
      ["POST", `${P}/endpoints`, { endpoint: { branch_id: dev, type: "read_write_plus" } }, 400],
      ["POST", `${P}/endpoints`, { endpoint: { branch_id: 42, type: "read_write" } }, 400],
      ["POST", `${P}/endpoints`, { endpoint: { branch_id: "BR_UPPER", type: "read_write" } }, 400],
      [
        "POST",
        `${P}/endpoints`,
        { endpoint: { branch_id: dev, type: "read_write", suspend_timeout_seconds: 604801 } },
        400,
      ],
      [
        "POST",
        `${P}/endpoints`,
        { endpoint: { branch_id: dev, type: "read_write", suspend_timeout_seconds: -2 } },
        400,
      ],
      [
        "POST",
        `${P}/endpoints`,
        { endpoint: { branch_id: dev, type: "read_write", autoscaling_limit_min_cu: "1" } },
        400,
      ],
      [
        "POST",
        `${P}/endpoints`,
        { endpoint: { branch_id: dev, type: "read_write", pooler_mode: "session" } },
        400,
      ],
      ["POST", `${P}/endpoints`, { endpoint: { branch_id: dev, type: "read_write", name: "" } }, 400],
      [
        "POST",
        `${P}/endpoints`,
        { endpoint: { branch_id: dev, type: "read_write", settings: { pg_settings: { a: 1 } } } },
        400,
      ],
      [
        "POST",
        `${P}/endpoints`,
        { endpoint: { branch_id: dev, type: "read_write", name: "x".repeat(5000) } },
        413,
      ],
      ["PATCH", `${P}/endpoints/${seeded.id}`, { endpoint: { disabled: "yes" } }, 400],
      ["PATCH", `${P}/endpoints/${seeded.id}`, { endpoint: { autoscaling_limit_max_cu: 0 } }, 400],
      ["PATCH", `${P}/endpoints/${seeded.id}`, {}, 400],
      ["POST", "/api_keys", { key_name: 7 }, 400],
      ["POST", "/api_keys", undefined, 400],
      ["GET", "/projects?limit=401", undefined, 400],
      ["GET", "/projects?limit=0", undefined, 400],
    ];
    for (const [method, path, body, status, rawBody] of cases) {
      const res = await h.api(method, path, body, rawBody === undefined ? {} : { rawBody });
      const label = `${method} ${path} ${rawBody ?? JSON.stringify(body)?.slice(0, 80)}`;
      expect(res.status, label).toBe(status);
      expect(res.body, label).toEqual({
        code: "",
        message: expect.any(String),
        request_id: expect.any(String),
      });
    }
    expect(await worldSnapshot(h)).toEqual(before);
  });
});
