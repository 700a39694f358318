// Branches through the platform API: created from a parent (optionally with
// endpoints) by a create_branch operation that holds the project's lock, `init`
// until it finishes ("branch not ready yet"), renamed, protected, set to expire,
// deleted. Every response is checked against the OpenAPI document.
import { describe, expect, it } from "vitest";
import { branchesOf, startHarness, type Harness } from "../../test/emulator/harness.ts";
import { conforming } from "../../test/emulator/openapi.ts";

const P = "/projects/demo-project";
const list = "/projects/{project_id}/branches";
const one = "/projects/{project_id}/branches/{branch_id}";

const inSeconds = (h: Harness, s: number) =>
  new Date(h.clock.now() + s * 1000).toISOString().slice(0, 19) + "Z";

describe("branches", () => {
  it("a new branch is init while create_branch runs: endpoints on it get 422, the project 423; then ready", async () => {
    const h = await startHarness();
    const { dev } = await branchesOf(h);
    const created = await conforming(h, "POST", list, `${P}/branches`, {
      branch: { parent_id: dev, name: "preview-42", protected: false },
    });
    expect(created.status).toBe(201);
    const branch = created.body.branch;
    expect(branch).toMatchObject({
      name: "preview-42",
      parent_id: dev,
      current_state: "init",
      default: false,
    });
    expect(created.body.operations).toEqual([
      expect.objectContaining({ action: "create_branch", branch_id: branch.id, status: "running" }),
    ]);
    expect(created.body.endpoints).toEqual([]);
    const early = await h.api("POST", `${P}/endpoints`, {
      endpoint: { branch_id: branch.id, type: "read_write" },
    });
    expect(early.status).toBe(422);
    expect(early.body.message).toBe("branch not ready yet");
    const elsewhere = await h.api("POST", `${P}/endpoints`, {
      endpoint: { branch_id: dev, type: "read_write" },
    });
    expect(elsewhere.status).toBe(423);
    h.clock.advance(1000);
    const ready = await conforming(h, "GET", one, `${P}/branches/${branch.id}`);
    expect(ready.body.branch.current_state).toBe("ready");
    const endpoint = await h.api("POST", `${P}/endpoints`, {
      endpoint: { branch_id: branch.id, type: "read_write" },
    });
    expect(endpoint.status).toBe(201);
  });

  it("created with endpoints, from the default branch: each compute starts after the branch", async () => {
    const h = await startHarness();
    const { main } = await branchesOf(h);
    const created = await conforming(h, "POST", list, `${P}/branches`, {
      endpoints: [{ type: "read_write" }, { type: "read_only", autoscaling_limit_max_cu: 2 }],
    });
    expect(created.body.branch.parent_id).toBe(main);
    expect(created.body.branch.name).toBe(created.body.branch.id);
    expect(created.body.endpoints.map((e: { current_state: string }) => e.current_state)).toEqual([
      "init",
      "init",
    ]);
    expect(
      created.body.operations.map((o: { action: string; status: string }) => [o.action, o.status]),
    ).toEqual([
      ["create_branch", "running"],
      ["start_compute", "scheduling"],
      ["start_compute", "scheduling"],
    ]);
    h.clock.advance(3000);
    const endpoints = (
      await conforming(h, "GET", `${one}/endpoints`, `${P}/branches/${created.body.branch.id}/endpoints`)
    ).body.endpoints;
    expect(endpoints.map((e: { current_state: string }) => e.current_state)).toEqual(["active", "active"]);
  });

  it.each([
    [{ branch: { parent_id: "br-nowhere" } }, 404, /parent branch not found/],
    [{ branch: { name: "dev" } }, 409, /already exists/],
    [{ branch: { expires_at: "2000-01-01T00:00:00Z" } }, 400, /expires_at: must be in the future/],
    [{ branch: { expires_at: "tomorrow" } }, 400, /branch.expires_at/],
    [{ endpoints: [{ type: "read_write" }, { type: "read_write" }] }, 400, /only one read_write/],
    [{ branch: { name: "" } }, 400, /branch.name/],
  ])("a create %j is refused with %i naming the problem", async (body, status, message) => {
    const h = await startHarness();
    const res = await conforming(h, "POST", list, `${P}/branches`, body);
    expect(res.status).toBe(status);
    expect(res.body.message).toMatch(message);
  });

  it("is listed, renamed, protected against deletion, deleted with its endpoints, and a second DELETE is 204", async () => {
    const h = await startHarness();
    const created = await h.api("POST", `${P}/branches`, {
      branch: { name: "feature", protected: true },
      endpoints: [{ type: "read_write" }],
    });
    const id = created.body.branch.id;
    h.clock.advance(2000);
    const listed = await conforming(h, "GET", list, `${P}/branches`);
    const listedNames = listed.body.branches.map((b: { name: string }) => b.name);
    // The document's default order: the latest change first.
    expect(listedNames[0]).toBe("feature");
    expect([...listedNames].sort()).toEqual(["dev", "feature", "main", "staging"]);
    const renamed = await conforming(h, "PATCH", one, `${P}/branches/${id}`, {
      branch: { name: "feature-2" },
    });
    expect(renamed.body).toMatchObject({ branch: { name: "feature-2", protected: true }, operations: [] });
    expect(
      (await conforming(h, "PATCH", one, `${P}/branches/${id}`, { branch: { name: "dev" } })).status,
    ).toBe(409);
    const refused = await conforming(h, "DELETE", one, `${P}/branches/${id}`);
    expect(refused.status).toBe(422);
    await conforming(h, "PATCH", one, `${P}/branches/${id}`, { branch: { protected: false } });
    const deleted = await conforming(h, "DELETE", one, `${P}/branches/${id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.operations.map((o: { action: string }) => o.action)).toEqual([
      "suspend_compute",
      "delete_timeline",
    ]);
    expect((await h.api("GET", `${P}/branches/${id}`)).status).toBe(404);
    expect((await h.api("GET", `${P}/endpoints`)).body.endpoints).toHaveLength(1); // the seeded one
    const again = await conforming(h, "DELETE", one, `${P}/branches/${id}`);
    expect(again.status).toBe(204);
    expect(again.body).toBeUndefined();
  });

  it("the default branch and a branch with children cannot be deleted (422)", async () => {
    const h = await startHarness();
    const { main, dev } = await branchesOf(h);
    await h.api("POST", `${P}/branches`, { branch: { parent_id: dev, name: "child" } });
    h.clock.advance(1000);
    for (const id of [main, dev]) {
      const res = await conforming(h, "DELETE", one, `${P}/branches/${id}`);
      expect(res.status).toBe(422);
    }
  });

  it("the platform deletes a branch at its expires_at, endpoints included; clearing it keeps the branch", async () => {
    const h = await startHarness();
    const expiring = await h.api("POST", `${P}/branches`, {
      branch: { name: "pr-1", expires_at: inSeconds(h, 10) },
      endpoints: [{ type: "read_write" }],
    });
    const kept = await h.api("POST", `${P}/branches`, { branch: { name: "pr-2" } });
    expect(kept.status).toBe(423); // the first branch's operations hold the project
    h.clock.advance(2000);
    const second = await h.api("POST", `${P}/branches`, {
      branch: { name: "pr-2", expires_at: inSeconds(h, 5) },
    });
    expect(second.body.branch.expires_at).toEqual(expect.any(String));
    h.clock.advance(1000);
    const cleared = await conforming(h, "PATCH", one, `${P}/branches/${second.body.branch.id}`, {
      branch: { expires_at: null },
    });
    expect(cleared.body.branch.expires_at).toBeUndefined();
    h.clock.advance(10_000);
    const names = (await h.api("GET", `${P}/branches`)).body.branches.map((b: { name: string }) => b.name);
    expect([...names].sort()).toEqual(["dev", "main", "pr-2", "staging"]);
    const endpoints = (await h.api("GET", `${P}/endpoints`)).body.endpoints;
    expect(endpoints.map((e: { branch_id: string }) => e.branch_id)).not.toContain(expiring.body.branch.id);
    const ops = (await h.api("GET", `${P}/operations?limit=100`)).body.operations;
    expect(ops[0]).toMatchObject({ action: "delete_timeline", branch_id: expiring.body.branch.id });
  });
});

describe("branch annotations", () => {
  it("the create's annotation_value is kept: the list carries it by branch id, the branch's GET as its annotation", async () => {
    const h = await startHarness();
    const mark = { "neoncloud.dev/owner": "k8s-0a1b2c3d-0123456789abcdef", purpose: "preview" };
    const created = await conforming(h, "POST", list, `${P}/branches`, {
      branch: { name: "marked" },
      endpoints: [{ type: "read_write" }],
      annotation_value: mark,
    });
    const id = created.body.branch.id;
    // The branch and its endpoint in one request, each with its operation.
    expect(created.body.endpoints).toEqual([
      expect.objectContaining({ branch_id: id, pending_state: "active" }),
    ]);
    expect(created.body.operations.map((o: { action: string }) => o.action)).toEqual([
      "create_branch",
      "start_compute",
    ]);
    h.clock.advance(2000);
    const listed = await conforming(h, "GET", list, `${P}/branches`);
    expect(listed.body.annotations).toEqual({
      [id]: {
        object: { type: "console/branch", id },
        value: mark,
        created_at: created.body.branch.created_at,
        updated_at: created.body.branch.created_at,
      },
    });
    const read = await conforming(h, "GET", one, `${P}/branches/${id}`);
    expect(read.body.annotation.value).toEqual(mark);
    // A branch never annotated shows an empty value.
    const { dev } = await branchesOf(h);
    const plain = await conforming(h, "GET", one, `${P}/branches/${dev}`);
    expect(plain.body.annotation).toEqual({ object: { type: "console/branch", id: dev }, value: {} });
    // Only the listed page's branches: a page without the marked branch has no annotations.
    const page = await conforming(h, "GET", list, `${P}/branches?limit=1&sort_by=name&sort_order=asc`);
    expect(page.body.branches[0].name).toBe("dev");
    expect(page.body.annotations).toEqual({});
  });

  it("cannot be changed by a PATCH (the update body has no annotation field): refused, naming the field", async () => {
    const h = await startHarness();
    const created = await h.api("POST", `${P}/branches`, {
      branch: { name: "marked" },
      annotation_value: { a: "1" },
    });
    const path = `${P}/branches/${created.body.branch.id}`;
    h.clock.advance(1000);
    for (const [body, field] of [
      [{ branch: { name: "renamed" }, annotation_value: { a: "2" } }, "annotation_value"],
      [{ branch: { annotation_value: { a: "2" } } }, "branch.annotation_value"],
      [{ branch: { annotations: { a: "2" } } }, "branch.annotations"],
    ] as const) {
      const res = await conforming(h, "PATCH", one, path, body);
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(
        new RegExp(`^${field.replace(".", "\\.")}: a branch's annotation is set only when it is created`),
      );
    }
    const after = await h.api("GET", path);
    expect(after.body).toMatchObject({ branch: { name: "marked" }, annotation: { value: { a: "1" } } });
  });

  it.each([
    [
      { annotation_value: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, "v"])) },
      /^annotation_value: at most 50 entries/,
    ],
    [{ annotation_value: { n: 1 } }, /^annotation_value\.n: /],
    [{ annotation_value: ["a"] }, /^annotation_value: /],
  ])("a create's annotation_value %j is refused (400)", async (body, message) => {
    const h = await startHarness();
    const res = await conforming(h, "POST", list, `${P}/branches`, body);
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(message);
  });

  it("50 entries are accepted, and a seeded branch may carry one", async () => {
    const h = await startHarness({
      seed: {
        projects: [
          {
            id: "demo-project",
            name: "demo",
            branches: [{ id: "br-seeded", name: "dev", annotation_value: { by: "seed" } }],
          },
        ],
      },
    });
    const value = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, "v"]));
    expect((await h.api("POST", `${P}/branches`, { annotation_value: value })).status).toBe(201);
    const seeded = await h.api("GET", `${P}/branches/br-seeded`);
    expect(seeded.body.annotation.value).toEqual({ by: "seed" });
  });
});
