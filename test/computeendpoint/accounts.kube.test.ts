// Two API keys of one platform account, managing endpoints of one project: the operator's default
// key and a team's own (spec.credentials). The platform's lock is the project's and its rate limit
// the account's, whichever key sends, so the operator takes the project's turns once for both keys
// (no 423 of its own making) and lists the project once for the readers of both.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyCredentialsSecret } from "../support/credentials.ts";
import { startOperatorHarness, type OperatorHarness } from "../support/operator.ts";
import { endpoint, factory, reader } from "./scenario.ts";

let h: OperatorHarness;
const { readyWith } = reader(() => h);

/** What the emulator served so far: requests by route, and 423s on any route. */
function served() {
  const byRoute = h.emulator.requestLog.counters().by_route;
  const count = (route: string) => Object.values(byRoute[route] ?? {}).reduce((sum, n) => sum + n, 0);
  const locked = Object.values(byRoute).reduce((sum, statuses) => sum + (statuses["423"] ?? 0), 0);
  return { lists: count("GET /projects/:project_id/endpoints"), locked };
}

beforeAll(async () => {
  // Operations of half a second under the platform's project-wide lock (the emulator's default).
  h = await startOperatorHarness(factory, { prefix: "cep-accounts", emulator: { operationDurationMs: 500 } });
  // A second key of the same account, in a Secret of the namespace (as a team brings its own).
  const team = await h.platform.createApiKey("team-key");
  await applyCredentialsSecret(h.namespace, "team-key", team.key);
  await h.start();
});

afterAll(async () => {
  await h?.stop();
});

describe("ComputeEndpoints of one project with two keys of one account", () => {
  it("take the project's turns one at a time (no 423 of the operator's making) and list the project once", async () => {
    const before = served();
    const team = { credentials: { secretName: "team-key" } };
    const resources = [
      endpoint("default-dev", { branchId: "br-dev" }),
      endpoint("team-staging", { branchId: "br-staging", ...team }),
      endpoint("default-feature", { branchId: "br-feature" }),
      endpoint("team-dev-reader", { branchId: "br-dev", type: "read_only", ...team }),
    ];
    await Promise.all(resources.map((r) => h.apply(r)));
    const ready = await Promise.all(resources.map((r) => readyWith(r.metadata.name, undefined, 60_000)));
    expect(new Set(ready.map((o) => o.status?.endpointId)).size).toBe(resources.length);
    const after = served();
    expect(after.locked - before.locked).toBe(0);
    expect(after.lists - before.lists).toBe(1);
  });
});
