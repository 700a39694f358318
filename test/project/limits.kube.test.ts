// An account at its plan's project limit: a Project is refused with the platform's words, and
// asked again on a backoff that reaches a minute, so once a slot frees (a project deleted in the
// console, a plan raised) it goes on by itself, with a few creates in between, never a storm.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startOperatorHarness, testSeed, type OperatorHarness } from "../support/operator.ts";
import { condition, factory, project, requests, until, type ProjectObject } from "./scenario.ts";

let h: OperatorHarness;
let sent: ReturnType<typeof requests>;
const read = () => h.get<ProjectObject>("project", "late");
const creates = () => sent.sent((r) => r === "POST /projects").length;

beforeAll(async () => {
  h = await startOperatorHarness(factory, {
    prefix: "limit",
    // Room for one project, which the seed's takes.
    emulator: { seed: { ...testSeed, limits: { plan: "launch", max_projects: 1 } } },
  });
  sent = requests(h.emulator);
  await h.start();
});

afterAll(async () => {
  await h?.stop();
});

describe("a Project at the account's project limit", () => {
  it("is refused, Stalled, asked again with backoff, and made once a slot frees, with no spec change", async () => {
    sent.since();
    await h.apply(project("late"));
    const refused = await until(read, "False", { reason: "ProjectLimitReached" });
    expect(condition(refused, "Ready")?.message).toContain("projects limit of 1");
    expect(condition(refused, "Stalled")?.status).toBe("True");
    // Not a storm: the backoff doubles from seconds.
    await new Promise((r) => setTimeout(r, 15_000));
    const whileRefused = creates();
    expect(whileRefused).toBeGreaterThanOrEqual(2);
    expect(whileRefused).toBeLessThanOrEqual(4);

    // A slot frees outside the cluster.
    await h.platform.deleteProject("proj-alpha");
    const made = await until(read, "True", { timeoutMs: 120_000 });
    expect(made.status?.projectId).toBeDefined();
    // A few more tries at most: it never waits for the spec, nor for the resync.
    expect(creates() - whileRefused).toBeLessThanOrEqual(3);
  });
});
