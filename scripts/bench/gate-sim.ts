// A simulation of one storm under the project-wide lock, on a clock of its own: the client's real
// mutation gate (src/platform/gate.ts) and durations (src/platform/durations.ts) against projects
// that answer 423 while an operation runs, with operations drawn uniformly within ± jitter of
// their mean. Many seeds run in seconds where the live benchmark runs one in a minute or two, so
// a change to the gate's rules can be judged on the spread of outcomes, not on one run's luck.
//
// What it leaves out, so its figures are the gate's alone: the Kubernetes side (work queue,
// status writes), the rate budget, and the operations tracker's polls, modelled only as the reads
// that show an operation's outcome (a list before a turn once two proved ends wait, as
// `lookBeforeTurn` does where turns are long; else one per five ends or 6.25 s). Its figures are
// not the benchmark's and are never published as such.
//
//   node scripts/bench/gate-sim.ts [--shape 60x3] [--operation-ms 3000] [--jitter 0.5] [--seeds 200]
import { parseArgs } from "node:util";
import { OperationDurations } from "../../src/platform/durations.ts";
import { LockedError, ProjectBusyError } from "../../src/platform/errors.ts";
import { GuessedEnds, MutationGate } from "../../src/platform/gate.ts";
import type { Operation } from "../../src/platform/schemas.ts";
import { seededRandom } from "../../tools/emulator/random.ts";

const { values } = parseArgs({
  options: {
    shape: { type: "string", default: "60x3" },
    "operation-ms": { type: "string", default: "3000" },
    jitter: { type: "string", default: "0.5" },
    seeds: { type: "string", default: "100" },
  },
});
const [endpoints, projects] = values.shape.split("x").map(Number) as [number, number];
const operationMs = Number(values["operation-ms"]);
const jitter = Number(values.jitter);
const seeds = Number(values.seeds);

/** The poll interval and the tracker's proof batch (operations.ts). */
const pollMs = 5_000;
const proofBatch = 5;

interface Timer {
  at: number;
  run: () => void;
  cancelled: boolean;
}

interface Outcome {
  time: number;
  floor: number;
  locked: number;
  lists: number;
  p50: number;
}

async function storm(seed: number): Promise<Outcome> {
  const random = seededRandom(seed);
  let now = 0;
  const timers: Timer[] = [];
  // The gate's wake timers run on this clock.
  const realSetTimeout = globalThis.setTimeout;
  const realClearTimeout = globalThis.clearTimeout;
  globalThis.setTimeout = ((run: () => void, ms: number) => {
    const t: Timer = { at: now + Math.max(0, ms), run, cancelled: false };
    timers.push(t);
    return { unref: () => t, ref: () => t, hasRef: () => false, [Symbol.toPrimitive]: () => 0, timer: t };
  }) as unknown as typeof setTimeout;
  globalThis.clearTimeout = ((handle: { timer?: Timer } | undefined) => {
    if (handle?.timer) handle.timer.cancelled = true;
  }) as typeof clearTimeout;
  const later = (ms: number, run: () => void) => void setTimeout(run, ms);

  const durations = new OperationDurations({ now: () => now });
  const guesses = new GuessedEnds();
  let locked = 0;
  let lists = 0;
  const drawnTotal = new Array<number>(projects).fill(0);
  const readyAt: number[] = [];

  for (let pi = 0; pi < projects; pi++) {
    const projectId = `p${pi}`;
    const line = Math.ceil((endpoints - pi) / projects);
    const ops: (Operation & { end: number })[] = [];
    let unread: (Operation & { end: number })[] = [];
    let turns = 0;
    let lastLookTurn = 0;
    const view = (op: Operation & { end: number }, at: number): Operation => ({
      ...op,
      status: op.end <= at ? "finished" : "running",
      totalDurationMs: Math.round(Math.min(at, op.end) - Date.parse(op.createdAt)),
    });
    /** One operations list of the project: its outcomes read, its durations learned. */
    const list = () => {
      lists++;
      const shown = ops.map((op) => view(op, now));
      readyAt.push(...unread.filter((u) => u.end <= now).map(() => now));
      unread = unread.filter((u) => u.end > now);
      durations.observeAll(shown);
      gate.observe(shown, now);
      return Promise.resolve();
    };
    const gate: MutationGate = new MutationGate(projectId, {
      now: () => now,
      expected: (o, share) => durations.endedBy(o, share),
      borrowed: (o, share) => durations.borrowedEndedBy(o, share),
      outlasted: (o, ms) => durations.outlasted(o, ms),
      guesses,
      projectWideLock: () => true,
      maxInlineWaitMs: 0,
      // Where three turns outlast the poll's wait for a batch, a look before the turn once two wait.
      lookFirst: () => 3 * gate.turnMs() > pollMs * 1.25 && turns - lastLookTurn >= 3,
    });
    const send = () => {
      const running = ops.find((op) => op.end > now);
      if (running) {
        locked++;
        return Promise.reject(
          new LockedError("423", { route: "POST /projects/{project_id}/endpoints", status: 423 }),
        );
      }
      const ms = operationMs * (1 - jitter + 2 * jitter * random());
      drawnTotal[pi]! += ms;
      const op = {
        id: `${projectId}-op${ops.length}`,
        projectId,
        branchId: `${projectId}-b${ops.length}`,
        endpointId: undefined,
        action: "start_compute",
        status: "running",
        failuresCount: 0,
        createdAt: new Date(now).toISOString(),
        updatedAt: new Date(now).toISOString(),
        error: undefined,
        retryAt: undefined,
        totalDurationMs: 0,
        end: now + ms,
      };
      // What ran before has ended (the lock proved it): its outcome waits for a read.
      durations.ended(ops.map((o) => o.id));
      ops.push(op);
      unread.push(op);
      turns++;
      return Promise.resolve({ operations: [view(op, now)] });
    };
    const confirm = () => {
      lastLookTurn = turns;
      return list();
    };

    let sent = 0;
    // The work queue: one reconcile of a resource due at a time, the earliest asked for wins.
    const due = new Map<string, number>();
    const done = new Set<string>();
    const queue = (ticket: string, ms: number) => {
      if (done.has(ticket)) return;
      const at = now + ms;
      const before = due.get(ticket);
      if (before === undefined || before <= now || at < before) {
        due.set(ticket, at);
        later(ms, () => {
          if (due.get(ticket) === at) void reconcile(ticket);
        });
      }
    };
    const reconcile = async (ticket: string): Promise<void> => {
      due.set(ticket, Number.NEGATIVE_INFINITY);
      try {
        const answer = await gate.run(send, (a) => a.operations, {
          ticket,
          confirm,
          wake: () => queue(ticket, 0),
        });
        durations.started(answer.operations);
        done.add(ticket);
        sent++;
        if (sent === line) later(0, () => tail());
      } catch (err) {
        if (!(err instanceof ProjectBusyError)) throw err;
        queue(ticket, err.retryAfterMs ?? 1_000);
      }
    };
    // The reads of a storm (the tracker's batch): five ends, or the oldest 1.25 polls old.
    const poll = () => {
      if (sent === line) return;
      const looks = 3 * gate.turnMs() > pollMs * 1.25;
      const ended = unread.filter((u) => u.end <= now);
      if (
        !looks &&
        (ended.length >= proofBatch || (ended[0] !== undefined && now - ended[0].end >= pollMs * 1.25))
      )
        void list();
      later(250, poll);
    };
    // After the last create: looks when it should have ended, then every second until all are read.
    const tail = () => {
      if (unread.length === 0) return;
      const last = unread.at(-1)!;
      if (last.end <= now) void list();
      later(Math.max(250, Math.min(1_000, last.end - now + 100)), tail);
    };
    for (let i = 0; i < line; i++) queue(`${projectId}/cep-${i}`, 0);
    later(250, poll);
  }

  // Run the clock until nothing is due.
  for (;;) {
    const live = timers.filter((t) => !t.cancelled);
    if (live.length === 0) break;
    live.sort((a, b) => a.at - b.at);
    const next = live[0]!;
    timers.splice(timers.indexOf(next), 1);
    now = Math.max(now, next.at);
    next.run();
    // Let the gate's awaits (answers resolved at once) run before the clock moves.
    for (let i = 0; i < 20; i++) await Promise.resolve();
    if (now > 3_600_000) throw new Error("the simulated storm did not end");
  }
  globalThis.setTimeout = realSetTimeout;
  globalThis.clearTimeout = realClearTimeout;
  readyAt.sort((a, b) => a - b);
  const time = readyAt.at(-1)!;
  return {
    time,
    floor: Math.max(...drawnTotal),
    locked: locked / endpoints,
    lists: lists / endpoints,
    p50: readyAt[Math.floor(readyAt.length / 2)]! / time,
  };
}

const results: Outcome[] = [];
for (let seed = 1; seed <= seeds; seed++) results.push(await storm(seed));
const q = (xs: number[], share: number) => [...xs].sort((a, b) => a - b)[Math.ceil(share * xs.length) - 1]!;
const show = (name: string, xs: number[]) =>
  console.log(
    `${name.padEnd(22)} mean ${(xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(3)}  p50 ${q(xs, 0.5).toFixed(3)}  p90 ${q(xs, 0.9).toFixed(3)}  max ${Math.max(...xs).toFixed(3)}`,
  );
console.log(`${endpoints} over ${projects}, ${operationMs} ms ± ${jitter * 100}%, ${seeds} seeds`);
show(
  "time ÷ floor",
  results.map((r) => r.time / r.floor),
);
show(
  "423s / endpoint",
  results.map((r) => r.locked),
);
show(
  "lists / endpoint",
  results.map((r) => r.lists),
);
show(
  "requests / endpoint",
  results.map((r) => 1 + r.locked + r.lists + projects / endpoints),
);
show(
  "p50 ÷ all Ready",
  results.map((r) => r.p50),
);
