// Answers where the platform's documents allow more than one: a DELETE of an
// endpoint that is already gone (204 with no body), and responses without the
// fields the OpenAPI document marks deprecated.
import { describe, expect, it } from "vitest";
import { branchesOf, startHarness } from "../../test/emulator/harness.ts";
import { responseErrors } from "../../test/emulator/openapi.ts";

const P = "/projects/demo-project";
const one = "/projects/{project_id}/endpoints/{endpoint_id}";

describe("DELETE of an endpoint that is already gone", () => {
  it("answers 204 with no body, for one deleted before and one that never existed", async () => {
    const h = await startHarness();
    const { dev } = await branchesOf(h);
    const created = await h.api("POST", `${P}/endpoints`, {
      endpoint: { branch_id: dev, type: "read_write", disabled: true },
    });
    const path = `${P}/endpoints/${created.body.endpoint.id}`;
    expect((await h.api("DELETE", path)).status).toBe(200);
    for (const gone of [path, `${P}/endpoints/ep-never-there-12345678`]) {
      const again = await h.api("DELETE", gone);
      expect(again.status).toBe(204);
      expect(again.body).toBeUndefined();
      expect(again.headers.get("content-length")).toBeNull();
      expect(responseErrors("DELETE", one, again.status, again.body)).toEqual([]);
    }
    // The project itself must still exist.
    expect((await h.api("DELETE", "/projects/no-such-project/endpoints/ep-x")).status).toBe(404);
  });

  it("answers 404 under missingEndpointDelete 404", async () => {
    const h = await startHarness({ missingEndpointDelete: 404 });
    const res = await h.api("DELETE", `${P}/endpoints/ep-never-there-12345678`);
    expect(res.status).toBe(404);
    expect(res.body.message).toMatch(/endpoint not found/);
    expect(responseErrors("DELETE", one, res.status, res.body)).toEqual([]);
  });
});

describe("deprecated response fields", () => {
  it("are there by default, as the document still requires them", async () => {
    const h = await startHarness();
    const [endpoint] = (await h.api("GET", `${P}/endpoints`)).body.endpoints;
    expect(endpoint).toMatchObject({ pooler_enabled: false, pooler_mode: "transaction" });
    expect((await h.api("GET", "/projects")).body.projects[0]).toHaveProperty("cpu_used_sec");
  });

  it("are left out under dropDeprecatedFields, and only a check that allows it accepts their absence", async () => {
    const h = await startHarness({ dropDeprecatedFields: true });
    const { dev } = await branchesOf(h);
    const created = await h.api("POST", `${P}/endpoints`, {
      endpoint: { branch_id: dev, type: "read_write" },
    });
    const responses = [
      ["POST", "/projects/{project_id}/endpoints", created],
      ["GET", "/projects/{project_id}/endpoints", await h.api("GET", `${P}/endpoints`)],
      ["GET", one, await h.api("GET", `${P}/endpoints/${created.body.endpoint.id}`)],
      ["GET", "/projects", await h.api("GET", "/projects")],
      ["GET", "/projects/{project_id}/branches", await h.api("GET", `${P}/branches`)],
      ["GET", "/projects/{project_id}", await h.api("GET", P)],
      ["POST", "/projects", await h.api("POST", "/projects", { project: {} })],
    ] as const;
    const serialized = JSON.stringify(responses.map(([, , res]) => res.body));
    for (const field of ["pooler_enabled", "pooler_mode", "cpu_used_sec", '"primary"'])
      expect(serialized).not.toContain(field);
    for (const [method, path, res] of responses) {
      expect(responseErrors(method, path, res.status, res.body, { deprecatedMayBeMissing: true })).toEqual(
        [],
      );
      expect(responseErrors(method, path, res.status, res.body).join("\n")).toMatch(
        /pooler_enabled|cpu_used_sec|primary/,
      );
    }
  });
});
