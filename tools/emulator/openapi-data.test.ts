// Fidelity of the data routes: branches from a point or from the schema alone, anonymized
// branches, snapshots and backup schedules answer as the official OpenAPI document says, in
// success and in error.
import { describe, expect, it } from "vitest";
import { branchesOf, startHarness } from "../../test/emulator/harness.ts";
import { conforming } from "../../test/emulator/openapi.ts";

const P = "/projects/demo-project";
const B = "/projects/{project_id}/branches/{branch_id}";
const S = "/projects/{project_id}/snapshots/{snapshot_id}";

describe("the data routes conform to the official OpenAPI document", () => {
  it("for branches from a point, anonymized branches, snapshots and backup schedules", async () => {
    // Without Postgres: these are the answers' shapes, not the data (other tests hold those).
    const h = await startHarness({ postgres: false });
    const { main, dev } = await branchesOf(h);
    const at = new Date(h.clock.now()).toISOString();
    const statuses: number[] = [];
    const call = async (method: string, template: string, path: string, body?: unknown) => {
      const res = await conforming(h, method, template, path, body);
      statuses.push(res.status);
      h.clock.advance(5000); // each change's operations end before the next
      return res;
    };

    const branches = "/projects/{project_id}/branches";
    const past = await call("POST", branches, `${P}/branches`, { branch: { parent_timestamp: at } });
    await call("POST", branches, `${P}/branches`, { branch: { init_source: "schema-only" } });
    await call("POST", branches, `${P}/branches`, {
      branch: { parent_lsn: past.body.branch.parent_lsn },
    });
    await call("POST", branches, `${P}/branches`, { branch: { parent_timestamp: "2000-01-01T00:00:00Z" } });

    const rule = {
      database_name: "neondb",
      schema_name: "public",
      table_name: "users",
      column_name: "email",
    };
    const anonymized = await call(
      "POST",
      "/projects/{project_id}/branch_anonymized",
      `${P}/branch_anonymized`,
      {
        masking_rules: [{ ...rule, masking_function: "anon.fake_email()" }],
        start_anonymization: true,
      },
    );
    await call("POST", "/projects/{project_id}/branch_anonymized", `${P}/branch_anonymized`, {
      masking_rules: [{ ...rule, masking_function: "anon.nothing()" }],
    });
    const an = `${P}/branches/${anonymized.body.branch.id}`;
    await call("GET", `${B}/masking_rules`, `${an}/masking_rules`);
    await call("GET", `${B}/masking_rules`, `${P}/branches/${dev}/masking_rules`);
    await call("PATCH", `${B}/masking_rules`, `${an}/masking_rules`, {
      masking_rules: [{ ...rule, masking_value: "'x'" }],
    });
    await call("PATCH", `${B}/masking_rules`, `${an}/masking_rules`, { masking_rules: [rule] });
    await call("GET", `${B}/anonymized_status`, `${an}/anonymized_status`);
    await call("POST", `${B}/anonymize`, `${an}/anonymize`);
    await call("GET", `${B}/anonymized_status`, `${an}/anonymized_status`);
    await call("POST", `${B}/anonymize`, `${P}/branches/${dev}/anonymize`);

    const taken = await call(
      "POST",
      `${B}/snapshot`,
      `${P}/branches/${main}/snapshot?name=s1&timestamp=${at}`,
    );
    await call("POST", `${B}/snapshot`, `${P}/branches/${dev}/snapshot`);
    await call("GET", "/projects/{project_id}/snapshots", `${P}/snapshots`);
    const one = `${P}/snapshots/${taken.body.snapshot.id}`;
    await call("PATCH", S, one, { snapshot: { name: "renamed" } });
    await call("PATCH", S, `${P}/snapshots/snap-missing`, { snapshot: { name: "x" } });
    const restored = await call("POST", `${S}/restore`, `${one}/restore`, { name: "restored" });
    await call("POST", `${S}/restore`, `${one}/restore`, { finalize_restore: true });
    await call("POST", `${S}/restore`, `${P}/snapshots/snap-missing/restore`, {});
    await call(
      "POST",
      `${B}/finalize_restore`,
      `${P}/branches/${restored.body.branch.id}/finalize_restore`,
      {},
    );
    await call("POST", `${B}/finalize_restore`, `${P}/branches/${dev}/finalize_restore`, {});
    await call("DELETE", S, one);
    await call("DELETE", S, one);

    const schedule = `${P}/branches/${main}/backup_schedule`;
    await call("PUT", `${B}/backup_schedule`, schedule, { schedule: [{ frequency: "daily", hour: 3 }] });
    await call("GET", `${B}/backup_schedule`, schedule);
    await call("PUT", `${B}/backup_schedule`, schedule, { schedule: [{ frequency: "yearly" }] });

    expect(statuses).toEqual([
      201, 201, 201, 400, 201, 400, 200, 404, 200, 400, 200, 200, 200, 404, 200, 400, 200, 200, 404, 200, 200,
      404, 200, 400, 202, 404, 200, 200, 400,
    ]);
  });
});
