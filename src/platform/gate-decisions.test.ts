// The mutation gate's decisions, one table each: when a project's next mutation goes, where a
// 423 moves it, when a resource is told to come back, and what an operations list changes. The
// gate runs on a clock of its own here; gate.test.ts has the same rules against the emulator.
import { describe, expect, it } from "vitest";
import { LockedError, ProjectBusyError } from "./errors.ts";
import { GuessedEnds, MutationGate } from "./gate.ts";
import type { Operation } from "./schemas.ts";

/** By when each share of start_compute operations has ended (as durations.ts would have learned). */
const endedBy: Record<number, number> = { 0.5: 2_000, 0.9: 2_400, 1: 2_500 };

const at = (ms: number) => new Date(ms).toISOString();

function operation(id: string, status = "running", extra: Partial<Operation> = {}): Operation {
  return {
    id,
    projectId: "shop",
    branchId: undefined,
    endpointId: undefined,
    action: "start_compute",
    status,
    failuresCount: 0,
    createdAt: at(0),
    updatedAt: at(0),
    error: undefined,
    retryAt: undefined,
    totalDurationMs: undefined,
    ...extra,
  };
}

function lab({ known = true, borrowed = false, ends = endedBy } = {}) {
  let now = 1_000_000;
  const lists: string[][] = [];
  /** What 423s proved of the operations' length: ids and the time proved. */
  const proofs: [string[], number][] = [];
  const gate = new MutationGate("shop", {
    now: () => now,
    outlasted: (ops, ms) => proofs.push([ops.map((op) => op.id), ms]),
    expected: (ops, share) => (known ? ops.length * ends[share]! : undefined),
    // Another action (say create_branch) is known: by when 90% of those have ended.
    ...(borrowed ? { borrowed: (ops, share) => ops.length * endedBy[share]! } : {}),
  });
  /** The operations list the gate may ask for before a mutation goes. */
  const confirm = (ids: readonly string[]) => {
    lists.push([...ids]);
    return Promise.resolve();
  };
  let next = 0;
  const accepted = () => Promise.resolve({ operations: [operation(`op-${++next}`)] });
  const locked = () =>
    Promise.reject(new LockedError("423", { route: "POST /projects/{project_id}/endpoints", status: 423 }));
  /** One reconcile's try: sent, or told when to come back. */
  /** Tickets the gate brought back (their `wake`), in order. */
  const woken: string[] = [];
  const ask = async (ticket: string, send = accepted): Promise<"sent" | number> => {
    try {
      await gate.run(send, (r) => r.operations, { ticket, confirm, wake: () => woken.push(ticket) });
      return "sent";
    } catch (err) {
      if (err instanceof ProjectBusyError) return err.retryAfterMs!;
      throw err;
    }
  };
  return {
    gate,
    lists,
    proofs,
    woken,
    ask,
    accepted,
    locked,
    now: () => now,
    advance: (ms: number) => void (now += ms),
  };
}

describe("the mutation gate's decisions", () => {
  it.each([
    {
      case: "durations known: when 90% of such operations have ended",
      known: true,
      first: 2_410,
      second: 4_410,
    },
    { case: "durations unknown: after a guessed second", known: false, first: 1_010, second: 2_010 },
  ])("after an answer, the next in line is told to come back $case", async ({ known, first, second }) => {
    const l = lab({ known });
    expect(await l.ask("ns/a")).toBe("sent");
    // In line by first ask: the second resource one turn (a usual duration) later.
    expect(await l.ask("ns/b")).toBe(first);
    expect(await l.ask("ns/c")).toBe(second);
  });

  it("looks with one operations list before the first mutation after a guessed duration", async () => {
    const l = lab({ known: false });
    await l.ask("ns/a");
    l.advance(1_000);
    expect(await l.ask("ns/b")).toBe("sent");
    expect(l.lists).toEqual([["op-1"]]);
  });

  it("an action never seen to finish, where another was: the next mutation goes when that one's 90% have ended, with no list", async () => {
    const l = lab({ known: false, borrowed: true });
    await l.ask("ns/a");
    expect(await l.ask("ns/b")).toBe(2_410);
    l.advance(2_400);
    expect(await l.ask("ns/b")).toBe("sent");
    expect(l.lists).toEqual([]);
  });

  it.each([
    // 423s in a row after the project's own create (answered at 0, tried when 90% of such
    // operations have ended, 2,400 ms): beyond the longest seen (2,500 ms) by the gap between
    // the two (100 ms), then probe steps, doubling from the third.
    { locks: 1, own: true, nextTryAt: 2_600 },
    { locks: 2, own: true, nextTryAt: 2_600 + 250 },
    { locks: 3, own: true, nextTryAt: 2_850 + 250 },
    { locks: 4, own: true, nextTryAt: 3_100 + 500 },
    { locks: 5, own: true, nextTryAt: 3_600 + 1_000 },
    // Another actor's change (the gate started nothing): probe steps only.
    { locks: 1, own: false, nextTryAt: 250 },
    { locks: 3, own: false, nextTryAt: 750 },
    { locks: 4, own: false, nextTryAt: 750 + 500 },
  ])(
    "after $locks 423(s) in a row (own operation: $own) the next try is at $nextTryAt ms",
    async ({ locks, own, nextTryAt }) => {
      const l = lab();
      const start = l.now();
      if (own) {
        await l.ask("ns/a");
        l.advance(2_400);
      }
      let comeBack = 0;
      for (let i = 0; i < locks; i++) {
        comeBack = (await l.ask("ns/b", l.locked)) as number;
        if (i < locks - 1) l.advance(comeBack - 10);
      }
      expect(l.now() + comeBack - 10 - start).toBe(nextTryAt);
    },
  );

  it("a 423 proves the last change's operation runs at least as long as it had when the try went, unless another actor's runs too", async () => {
    const l = lab();
    await l.ask("ns/a");
    l.advance(2_400);
    await l.ask("ns/b", l.locked);
    expect(l.proofs).toEqual([[["op-1"], 2_400]]);
    // A list shows another actor's operation running: the lock may be its, and proves nothing of ours.
    l.gate.observe([operation("op-1"), operation("theirs")], l.now());
    l.advance(5_000);
    await l.ask("ns/b", l.locked);
    expect(l.proofs).toHaveLength(1);
  });

  it("after a second 423, the next try goes by the longest seen where what the 423s proved has moved it", async () => {
    // What durations.ts answers once the 423s proved the operation longer: the longest now 3,500 ms.
    const ends = { ...endedBy };
    const l = lab({ ends });
    await l.ask("ns/a");
    l.advance(2_400);
    expect(await l.ask("ns/b", l.locked)).toBe(2_600 - 2_400 + 10);
    l.advance(200);
    ends[0.9] = 3_300;
    ends[1] = 3_500;
    // Beyond the longest by the gap between it and the release: 3,700 ms after the answer, not a 250 ms step.
    expect(await l.ask("ns/b", l.locked)).toBe(3_700 - 2_600 + 10);
  });

  it("a resource that met a 423 keeps its place: it comes back first, the next one a turn later", async () => {
    const l = lab();
    await l.ask("ns/a");
    expect(await l.ask("ns/b")).toBe(2_410);
    expect(await l.ask("ns/c")).toBe(4_410);
    l.advance(2_400);
    expect(await l.ask("ns/b", l.locked)).toBe(210);
    expect(await l.ask("ns/c")).toBe(200 + 2_000 + 10);
    l.advance(200);
    expect(await l.ask("ns/b")).toBe("sent");
    expect(await l.ask("ns/c")).toBe(2_410);
  });

  it.each([
    {
      case: "settled, listed after the answer: free at once",
      status: "finished",
      listedAfter: true,
      free: true,
    },
    {
      case: "settled, but listed before the answer (may miss it): still held",
      status: "finished",
      listedAfter: false,
      free: false,
    },
    { case: "still running: still held", status: "running", listedAfter: true, free: false },
  ])("the project's own operation $case", async ({ status, listedAfter, free }) => {
    const l = lab();
    const listedAt = l.now() - 1;
    await l.ask("ns/a");
    l.advance(1_500);
    l.gate.observe([operation("op-1", status)], listedAfter ? l.now() : listedAt);
    expect((await l.ask("ns/b")) === "sent").toBe(free);
  });

  it("operations whose longest seen is hardly later than 90% of them are waited for to the longest", async () => {
    // 2,000 ms usually, 90% by 2,040, all by 2,080: waiting 40 ms more spares the one 423 in ten.
    const l = lab({ ends: { 0.5: 2_000, 0.9: 2_040, 1: 2_080 } });
    await l.ask("ns/a");
    expect(await l.ask("ns/b")).toBe(2_090);
  });

  it("brings back the first in line when the lock frees before the turn it was told, and only it", async () => {
    const l = lab();
    await l.ask("ns/a");
    expect(await l.ask("ns/b")).toBe(2_410);
    expect(await l.ask("ns/c")).toBe(4_410);
    // a's operation ended sooner than such operations usually do: b's turn has come, c's not yet.
    l.advance(1_500);
    l.gate.observe([operation("op-1", "finished")], l.now());
    expect(l.woken).toEqual(["ns/b"]);
    expect(await l.ask("ns/b")).toBe("sent");
    l.advance(1_000);
    l.gate.observe([operation("op-2", "finished")], l.now());
    expect(l.woken).toEqual(["ns/b", "ns/c"]);
    // Brought back once: a second list that frees nothing new wakes nobody.
    l.gate.observe([operation("op-2", "finished")], l.now());
    expect(l.woken).toEqual(["ns/b", "ns/c"]);
  });

  it("holds the project for another actor's running operation until such operations have most likely ended", async () => {
    const l = lab();
    // Listed when it had run 500 ms: 1,900 ms to go until 90% of such operations have ended.
    l.gate.observe([operation("theirs", "running", { totalDurationMs: 500 })], l.now());
    expect(await l.ask("ns/a")).toBe(1_910);
    l.advance(1_900);
    expect(await l.ask("ns/a")).toBe("sent");
  });

  it("while no duration is known, one project of the account confirms its guess with a list; the others wait for what it learns", async () => {
    let now = 1_000_000;
    let known = false;
    const guesses = new GuessedEnds();
    const lists: string[] = [];
    const gates = ["shop", "blog"].map(
      (id) =>
        new MutationGate(id, {
          now: () => now,
          expected: (ops, share) => (known ? ops.length * endedBy[share]! : undefined),
          guesses,
        }),
    );
    const ask = async (gate: MutationGate, ticket: string) => {
      try {
        await gate.run(
          () => Promise.resolve({ operations: [operation(`${gate.projectId}-${ticket}`)] }),
          (r) => r.operations,
          {
            ticket,
            // The list shows its operation still running, a second after its start.
            confirm: (ids) => {
              lists.push(gate.projectId);
              gate.observe(
                ids.map((id) => operation(id, "running", { totalDurationMs: 1_000 })),
                now,
              );
              return Promise.resolve();
            },
          },
        );
        return "sent";
      } catch (err) {
        if (err instanceof ProjectBusyError) return err.retryAfterMs!;
        throw err;
      }
    };
    const [shop, blog] = gates as [MutationGate, MutationGate];
    expect(await ask(shop, "a")).toBe("sent");
    expect(await ask(blog, "a")).toBe("sent");
    now += 1_000;
    // The guessed second has passed for both: the first to ask lists, the other waits for it;
    // still running, the next look is when it has run twice as long.
    expect(await ask(shop, "b")).toBe(1_010);
    expect(await ask(blog, "b")).toBe(1_010);
    expect(lists).toEqual(["shop"]);
    // Meanwhile one finished (another project's list taught the account): both go when 90% of
    // such have ended since their own answer, without a list.
    known = true;
    now += 500;
    expect(await ask(blog, "b")).toBe(910);
    now += 900;
    expect(await ask(shop, "b")).toBe("sent");
    expect(await ask(blog, "b")).toBe("sent");
    expect(lists).toEqual(["shop"]);
  });

  it("a script (no ticket) waits for its turn inside the call instead of being handed back", async () => {
    const gate = new MutationGate("shop", { expected: () => 30 });
    const sent: string[] = [];
    const create = (id: string) => () => {
      sent.push(id);
      return Promise.resolve({ operations: [operation(id)] });
    };
    await gate.run(create("s-1"), (r) => r.operations);
    const second = await gate.run(create("s-2"), (r) => r.operations);
    expect(second.operations[0]!.id).toBe("s-2");
    expect(sent).toEqual(["s-1", "s-2"]);
  });
});
