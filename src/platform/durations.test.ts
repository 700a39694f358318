import { describe, expect, it } from "vitest";
import { lookSpread, OperationDurations } from "./durations.ts";

let branches = 0;
/** A finished operation of a request of its own (each on a branch of its own). */
const finished = (action: string, ms: number) => ({
  action,
  status: "finished",
  branchId: `b${++branches}`,
  createdAt: "2026-11-21T10:00:00.000Z",
  updatedAt: new Date(Date.parse("2026-11-21T10:00:00.000Z") + ms).toISOString(),
});

/** The operations of one request (a resize), as a list shows them: created together, run one after another. */
const chain = (steps: [string, number][], createdAt = "2026-11-21T10:00:00Z") => {
  let total = 0;
  return steps.map(([action, own], i) => {
    total += own;
    return {
      id: `op-${createdAt}-${i}`,
      action,
      status: "finished",
      branchId: "main",
      projectId: "shop",
      createdAt,
      updatedAt: createdAt,
      totalDurationMs: total,
    };
  });
};

describe("operation durations", () => {
  it("knows nothing until each action of a change has been seen to finish", () => {
    const durations = new OperationDurations();
    expect(durations.expected([{ action: "start_compute" }])).toBeUndefined();
    durations.observe(finished("start_compute", 2_000));
    expect(durations.expected([{ action: "start_compute" }])).toBe(2_000);
    expect(durations.expected([{ action: "suspend_compute" }, { action: "start_compute" }])).toBeUndefined();
  });

  it("adds up a chain, follows new durations gradually, and ignores failed or running ones", () => {
    const durations = new OperationDurations();
    durations.observe(finished("suspend_compute", 1_000));
    durations.observe(finished("start_compute", 2_000));
    durations.observe({ ...finished("start_compute", 60_000), status: "failed" });
    durations.observe({ ...finished("start_compute", 60_000), status: "running" });
    expect(durations.expected([{ action: "suspend_compute" }, { action: "start_compute" }])).toBe(3_000);
    durations.observe(finished("start_compute", 7_000));
    const after = durations.expected([{ action: "start_compute" }])!;
    expect(after).toBeGreaterThan(2_000);
    expect(after).toBeLessThan(7_000);
  });

  it("learns each chained operation's own time, not its wait behind the ones before it", () => {
    const durations = new OperationDurations();
    const resize = chain([
      ["apply_config", 1_800],
      ["suspend_compute", 2_100],
      ["start_compute", 1_950],
    ]);
    // A list shows them newest first; their totals count from the request.
    durations.observeAll([...resize].reverse());
    expect(durations.expected([{ action: "apply_config" }])).toBe(1_800);
    expect(durations.expected([{ action: "suspend_compute" }])).toBe(2_100);
    expect(durations.expected([{ action: "start_compute" }])).toBe(1_950);
    // A later start alone (another request) counts from its own creation.
    durations.observeAll(chain([["start_compute", 2_050]], "2026-11-21T10:01:00Z"));
    expect(durations.expected([{ action: "start_compute" }])).toBe(1_950 * 0.8 + 2_050 * 0.2);
  });

  it("learns a branch made with its endpoint (create_branch, then start_compute) by each one's own time", () => {
    // Learned as the sum, the project's gate would hold its lock idle for the create_branch's time
    // after every start of the branch's endpoint.
    const durations = new OperationDurations();
    durations.observeAll(
      chain([
        ["create_branch", 1_000],
        ["start_compute", 2_000],
      ]).reverse(),
    );
    expect(durations.expected([{ action: "create_branch" }])).toBe(1_000);
    expect(durations.expected([{ action: "start_compute" }])).toBe(2_000);
  });

  it("a chain's later operation seen before the earlier ones were learned counts from its creation", () => {
    const durations = new OperationDurations();
    const [, second] = chain([
      ["suspend_compute", 2_000],
      ["start_compute", 2_000],
    ]);
    durations.observe(second!);
    expect(durations.expected([{ action: "start_compute" }])).toBe(4_000);
  });

  it.each([
    { share: 0.5, after: 1_900 },
    { share: 0.9, after: 2_300 },
    { share: 1, after: 2_400 },
  ])("from enough finished operations, $share of them had ended after $after ms", ({ share, after }) => {
    const durations = new OperationDurations();
    for (let ms = 1_500; ms <= 2_400; ms += 100) durations.observe(finished("start_compute", ms));
    expect(durations.endedBy([{ action: "start_compute" }], share)).toBe(after);
    expect(durations.endedBy([{ action: "suspend_compute" }], share)).toBeUndefined();
  });

  it("from a few, shares are the mean plus a spread of at least 15% of it", () => {
    const durations = new OperationDurations();
    durations.observe(finished("start_compute", 2_000));
    expect(durations.endedBy([{ action: "start_compute" }], 0.5)).toBe(2_000);
    expect(durations.endedBy([{ action: "start_compute" }], 0.75)).toBe(2_300);
    expect(durations.endedBy([{ action: "start_compute" }], 1)).toBe(2_600);
    // The look at a change alone in its project takes its tail less cautiously: 10%.
    expect(durations.endedBy([{ action: "start_compute" }], 1, lookSpread)).toBe(2_400);
    // A spread seen larger than that is kept: 1.5 and 2.5 s, mean 2 s, mean deviation 0.5 s.
    durations.observe(finished("suspend_compute", 1_500));
    durations.observe(finished("suspend_compute", 2_500));
    expect(durations.endedBy([{ action: "suspend_compute" }], 1, lookSpread)).toBe(3_000);
  });

  it("from a few, a short first one does not pull the share below durations already seen", () => {
    const durations = new OperationDurations();
    for (const ms of [1_500, 2_500, 2_400]) durations.observe(finished("create_branch", ms));
    // Mean 2,133, mean deviation 422: 90% by 2,133 + 1.6 × 422.
    expect(durations.endedBy([{ action: "create_branch" }], 0.9)).toBeGreaterThanOrEqual(2_500);
  });

  it("of a storm started together, those still running count: the first seen to finish are the quickest", () => {
    let now = 0;
    const durations = new OperationDurations({ now: () => now });
    // Ten creates at once (operations of 1.5 to 2.5 s): at 1.7 s two have been seen to finish.
    for (let i = 0; i < 10; i++) durations.started([{ id: `op-${i}`, action: "start_compute" }]);
    now = 1_700;
    durations.observeAll([
      { ...finished("start_compute", 1_550), id: "op-0" },
      { ...finished("start_compute", 1_650), id: "op-1" },
    ]);
    const fromTheQuickest = new OperationDurations();
    fromTheQuickest.observe(finished("start_compute", 1_550));
    fromTheQuickest.observe(finished("start_compute", 1_650));
    // The eight still running pull the gate's 90% up, more the longer they run: the mean of all
    // ten (their time so far) plus 1.6 spreads of at least 15% of it.
    const quickest = fromTheQuickest.endedBy([{ action: "start_compute" }], 0.9)!;
    expect(quickest).toBeCloseTo(1_600 * 1.24);
    expect(durations.endedBy([{ action: "start_compute" }], 0.9)).toBeCloseTo(
      ((1_550 + 1_650 + 8 * 1_700) / 10) * 1.24,
    );
    // ... up to a quarter longer than the mean of those seen (one may have ended unseen).
    now = 1_900;
    expect(durations.endedBy([{ action: "start_compute" }], 0.9)).toBeCloseTo(
      ((1_550 + 1_650 + 8 * 1_900) / 10) * 1.24,
    );
    now = 5_000;
    expect(durations.endedBy([{ action: "start_compute" }], 0.9)).toBeCloseTo(
      ((1_550 + 1_650 + 8 * 2_000) / 10) * 1.24,
    );
    // Once they are seen to end (or a later change proves it), only what was seen counts.
    durations.ended(["op-2", "op-3", "op-4", "op-5", "op-6", "op-7", "op-8", "op-9"]);
    expect(durations.endedBy([{ action: "start_compute" }], 0.9)).toBe(
      fromTheQuickest.endedBy([{ action: "start_compute" }], 0.9),
    );
  });

  it("from a few, a 423's proof that one ran longer lifts the share, until a list shows its own time", () => {
    const durations = new OperationDurations();
    // The first seen of 1 s ± 50% was a short one: 90% by 600 + 1.6 × 90 (15% of the mean).
    durations.observe(finished("start_compute", 600));
    const fromTheShort = durations.endedBy([{ action: "start_compute" }], 0.9)!;
    expect(fromTheShort).toBeCloseTo(744);
    // The next change, sent then, met a 423 at 750 ms: its operation runs at least that long.
    durations.started([{ id: "next", action: "start_compute" }]);
    durations.outlasted([{ id: "next", action: "start_compute" }], 750);
    // 600 and 750: mean 675, spread 101 (15%): 90% by 837.
    expect(durations.endedBy([{ action: "start_compute" }], 0.9)).toBeCloseTo(675 + 1.6 * 101.25);
    // A later 423 proves more; proofs count at most twice the mean of those seen.
    durations.outlasted([{ id: "next", action: "start_compute" }], 5_000);
    expect(durations.endedBy([{ action: "start_compute" }], 0.5)).toBe((600 + 1_200) / 2);
    // The proof outlives the lock's proof of its end (the next change accepted) ...
    durations.ended(["next"]);
    expect(durations.endedBy([{ action: "start_compute" }], 0.5)).toBe((600 + 1_200) / 2);
    // ... until a list shows the operation's own time, which replaces it.
    durations.observe({ ...finished("start_compute", 1_300), id: "next" });
    expect(durations.endedBy([{ action: "start_compute" }], 0.5)).toBe((600 + 1_300) / 2);
    // A chain's 423 says nothing of which operation ran long.
    durations.outlasted(
      [
        { id: "a", action: "suspend_compute" },
        { id: "b", action: "start_compute" },
      ],
      9_000,
    );
    expect(durations.endedBy([{ action: "start_compute" }], 0.5)).toBe((600 + 1_300) / 2);
  });

  it("counts the account's changes in flight until each one's last operation is seen to end, for a while at most", () => {
    let now = 0;
    const durations = new OperationDurations({ now: () => now });
    // A project's create (two operations, one after another) and two endpoint creates.
    durations.started([
      { id: "timeline", action: "create_timeline" },
      { id: "start", action: "start_compute" },
    ]);
    durations.started([{ id: "e1", action: "start_compute" }]);
    durations.started([{ id: "e2", action: "start_compute" }]);
    expect(durations.inFlight()).toBe(3);
    // The chain is in flight until its last operation ends; a list shows e1 finished.
    durations.ended(["timeline"]);
    durations.observeAll([{ ...finished("start_compute", 1_000), id: "e1" }]);
    expect(durations.inFlight()).toBe(2);
    // One never seen to end ages out.
    now = 31_000;
    expect(durations.inFlight()).toBe(0);
  });

  it("one operation running alone (a single change) does not move the share: none ended before it", () => {
    let now = 0;
    const durations = new OperationDurations({ now: () => now });
    durations.observe(finished("suspend_compute", 1_600));
    const before = durations.endedBy([{ action: "suspend_compute" }], 1);
    durations.started([{ id: "alone", action: "suspend_compute" }]);
    now = 1_900;
    expect(durations.endedBy([{ action: "suspend_compute" }], 1)).toBe(before);
  });

  it("an action never seen to finish borrows the longest known one's share; none known, none borrowed", () => {
    const durations = new OperationDurations();
    expect(durations.borrowedEndedBy([{ action: "start_compute" }], 0.9)).toBeUndefined();
    durations.observe(finished("create_branch", 2_000));
    durations.observe(finished("suspend_compute", 1_000));
    const branch = durations.endedBy([{ action: "create_branch" }], 0.9)!;
    expect(durations.borrowedEndedBy([{ action: "start_compute" }], 0.9)).toBe(branch);
    // Known actions keep their own.
    expect(durations.borrowedEndedBy([{ action: "suspend_compute" }, { action: "start_compute" }], 0.9)).toBe(
      durations.endedBy([{ action: "suspend_compute" }], 0.9)! + branch,
    );
  });
});
