// `npm run bench:latency`: one change at a time, each alone in an otherwise idle project. For each
// change kind (create, resize, suspend, start, delete) it measures the operator's added wait: the
// time from the change reaching the API server to the resource Ready at its generation (or gone),
// minus the platform's own time for the operations that change started (from the emulator's
// operation records). Beside the operator's defaults, the same with the per-operation polling of
// the platform's popular Terraform provider (every 100 ms) and official SDK (every 1 s). Prints
// the figures and writes the "Single changes" section of docs/performance.md. See docs/benchmarks.md.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { startEmulator, type Emulator, type RequestLogEntry } from "../../tools/emulator/index.ts";
import { seededRandom } from "../../tools/emulator/random.ts";
import { asRun, flagReader, runInLab, say, sharedOptions } from "./cli.ts";
import type { Lab } from "./lab.ts";
import { operatorInNamespace } from "./operator-process.ts";
import { writeSection } from "./page.ts";
import { gitRevision } from "./report.ts";
import { byBench, operationsOf, receivedAt, type OperationRecord } from "./records.ts";
import { percentile, seconds } from "./stats.ts";
import type { CepWatch, Tracked } from "./watch.ts";

const usage = `Usage: node scripts/bench/latency.ts [--quick] [options]

  --quick            2 of each change, the operator's defaults only (full: 5 of each, and the two
                     per-operation polling clients beside)
  --repeats N        how many of each change kind
  --operation-ms N   mean duration of a platform operation (default 2000)
  --jitter F         each operation lasts operation-ms × (1 ± F) (default 0.25)
  --seed N           seed of the emulator's draws and of the pauses between changes (default 2026)
  --no-anchors       skip the per-operation polling clients (100 ms and 1 s)
  --out PATH         the page whose section is written (default docs/performance.md)
  --no-write         print only
  --keep             keep the work directory (operator logs)
  --trace            print every change's requests on a timeline (the report shows one create's)
`;

const { values } = parseArgs({
  options: {
    ...sharedOptions,
    quick: { type: "boolean", default: false },
    repeats: { type: "string" },
    anchors: { type: "boolean", default: true },
    "no-anchors": { type: "boolean", default: false },
  },
});
if (values.help) {
  process.stdout.write(usage);
  process.exit(0);
}
const { positive, jitter: jitterOf } = flagReader("bench:latency", usage);
const repeats = Math.round(positive(values.repeats, values.quick ? 2 : 5, "repeats"));
const operationMs = positive(values["operation-ms"], 2000, "operation-ms");
const jitter = jitterOf(values.jitter);
const randomSeed = positive(values.seed, 2026, "seed");
const anchors = values.anchors && !values["no-anchors"] && !values.quick;
// The tree the operator is built from, as it is when the run starts.
const revision = gitRevision();

/** The changes, in the order each endpoint goes through them. */
const kinds = ["create", "resize", "suspend", "start", "delete"] as const;
type Kind = (typeof kinds)[number];

/** The spec after each change (server-side apply of the whole manifest); delete deletes. */
const specAfter: Record<Exclude<Kind, "delete">, Record<string, unknown>> = {
  create: {},
  // A new size restarts an active endpoint: apply_config, suspend_compute, start_compute.
  resize: { computeUnits: { min: 2 } },
  suspend: { computeUnits: { min: 2 }, suspended: true },
  start: { computeUnits: { min: 2 }, suspended: false },
};

interface Client {
  label: string;
  description: string;
  flags: string[];
}

const clients: Client[] = [
  { label: "operator", description: "the operator (defaults: batched, poll 5 s)", flags: [] },
  ...(anchors
    ? [
        {
          label: "perop-100ms",
          description: "per-operation polling every 100 ms (the Terraform provider's)",
          flags: ["--operation-polling=per-operation", "--poll-interval=100ms"],
        },
        {
          label: "perop-1s",
          description: "per-operation polling every 1 s (the official SDK's)",
          flags: ["--operation-polling=per-operation", "--poll-interval=1s"],
        },
      ]
    : []),
];

/** One change, measured. Times are epoch ms. */
interface Measured {
  kind: Kind;
  repeat: number;
  projectId: string;
  /** kubectl started, the bench's watch saw the change, and saw it Ready (or gone). */
  appliedAt: number;
  seenAt: number;
  doneAt: number | undefined;
  /** The operator's requests for this change (on its project, or not project-bound), oldest first. */
  requests: RequestLogEntry[];
  /** The accepted mutation: when the platform received it (its operations start then). */
  sentAt: number | undefined;
  operations: OperationRecord[];
  /** From the mutation to the end of the last operation it started. */
  operationsMs: number;
  /**
   * The platform's own time for the change: its operations' (a delete: none, since the endpoint
   * leaves the platform's list at the DELETE's answer; its operation goes on, holding the lock).
   */
  platformMs: number;
  /** The operator's requests on the project after Ready (or gone) and before the next change. */
  trailing: number;
}

const projectOf = (repeat: number) => `lat-p${repeat}`;
const isLook = (e: RequestLogEntry) => e.method === "GET";
const isOperationsLook = (e: RequestLogEntry) => e.method === "GET" && e.route.includes("/operations");

function manifest(namespace: string, repeat: number, kind: Exclude<Kind, "delete">) {
  return {
    apiVersion: "neoncloud.dev/v1alpha1",
    kind: "ComputeEndpoint",
    metadata: { name: `lat-${repeat}`, namespace },
    spec: {
      projectId: projectOf(repeat),
      branchId: `br-lat-${repeat}`,
      type: "read_write",
      ...specAfter[kind],
    },
  };
}

/** Waits until `test` answers a time, polling the watch's record; undefined after `timeoutMs`. */
async function until(test: () => number | undefined, timeoutMs: number): Promise<number | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const at = test();
    if (at !== undefined || Date.now() > deadline) return at;
    await sleep(10);
  }
}

/** The project's operations the accepted mutation started, once they have all settled. */
async function operationsOfChange(
  emulator: Emulator,
  projectId: string,
  sent: RequestLogEntry,
): Promise<OperationRecord[]> {
  // created_at has whole seconds; the project is otherwise idle, so every operation created
  // between the second the mutation arrived and its answer is the change's.
  const from = Math.floor(receivedAt(sent) / 1000) * 1000;
  const to = Date.parse(sent.time);
  for (let attempt = 0; ; attempt++) {
    const ops = (await operationsOf(emulator.url, emulator.bootstrapKey, projectId)).filter((op) => {
      const created = Date.parse(op.created_at);
      return created >= from && created <= to;
    });
    const running = ops.some(
      (op) => !["finished", "skipped", "error", "cancelled", "failed"].includes(op.status),
    );
    if (!running || attempt > 300) return ops;
    await sleep(200);
  }
}

async function measure(
  lab: Lab,
  emulator: Emulator,
  watch: CepWatch,
  namespace: string,
  repeat: number,
  kind: Kind,
): Promise<Measured> {
  const name = `lat-${repeat}`;
  const projectId = projectOf(repeat);
  const tracked = (): Tracked | undefined => watch.tracked.get(name);
  const generation = Math.max(0, ...(tracked()?.generationSeenAt.keys() ?? []));
  const appliedAt = Date.now();
  if (kind === "delete") {
    await lab.kubectl(["delete", "computeendpoint", name, "-n", namespace, "--wait=false"]);
  } else {
    await lab.kubectl(
      ["apply", "--server-side", "--field-manager=bench", "-f", "-"],
      JSON.stringify(manifest(namespace, repeat, kind)),
    );
  }
  const seenAt =
    (await until(
      () =>
        kind === "create"
          ? tracked()?.addedAt
          : kind === "delete"
            ? tracked()?.deletingAt
            : tracked()?.generationSeenAt.get(generation + 1),
      30_000,
    )) ?? appliedAt;
  const doneAt = await until(
    () =>
      kind === "delete"
        ? tracked()?.goneAt
        : tracked()?.readyAtGeneration.get(kind === "create" ? 1 : generation + 1),
    120_000,
  );
  const end = doneAt ?? Date.now();
  const path = `/api/v2/projects/${projectId}/`;
  const requests = emulator.requestLog
    .latest()
    .filter((e) => !byBench(e) && receivedAt(e) >= appliedAt && receivedAt(e) <= end)
    .filter((e) => e.path.startsWith(path) || !e.path.includes("/projects/"));
  const sent = requests.find((e) => e.method !== "GET" && e.status >= 200 && e.status < 300);
  const operations = sent ? await operationsOfChange(emulator, projectId, sent) : [];
  const operationsMs = Math.max(0, ...operations.map((op) => op.total_duration_ms));
  return {
    kind,
    repeat,
    projectId,
    appliedAt,
    seenAt,
    doneAt,
    requests,
    sentAt: sent ? receivedAt(sent) : undefined,
    operations,
    operationsMs,
    platformMs: kind === "delete" ? 0 : operationsMs,
    trailing: 0,
  };
}

/** How the added wait splits: before the send, after the operations' end until a look saw it, and after that look. */
function parts(m: Measured) {
  const opsEnd = m.sentAt === undefined || m.platformMs === 0 ? undefined : m.sentAt + m.platformMs;
  const looks = m.requests.filter(isLook);
  const after = opsEnd === undefined ? undefined : looks.find((e) => receivedAt(e) >= opsEnd);
  return {
    beforeSendMs: m.sentAt === undefined ? undefined : m.sentAt - m.seenAt,
    endToLookMs: after === undefined || opsEnd === undefined ? undefined : receivedAt(after) - opsEnd,
    lookToDoneMs:
      after === undefined || m.doneAt === undefined ? undefined : m.doneAt - Date.parse(after.time),
    looksBeforeEnd:
      opsEnd === undefined || m.sentAt === undefined
        ? 0
        : m.requests.filter(
            (e) => isOperationsLook(e) && receivedAt(e) > (m.sentAt ?? 0) && receivedAt(e) < opsEnd,
          ).length,
  };
}

const addedWait = (m: Measured): number | undefined =>
  m.doneAt === undefined ? undefined : m.doneAt - m.seenAt - m.platformMs;

/** Where a change's requests went: `POST 201, GET operations ×3, GET endpoints`. */
function requestSummary(requests: readonly RequestLogEntry[]): string {
  const counts = new Map<string, number>();
  for (const e of requests) {
    const key = `${e.route.replace("/projects/:project_id", "").replace(/\/:[a-z_]+/g, "/…")} ${e.status}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].map(([k, n]) => (n > 1 ? `${k} ×${n}` : k)).join(", ");
}

/** A change's requests on a timeline, relative to the start and the end of its operations. */
function timeline(m: Measured): string[] {
  const start = m.sentAt ?? m.seenAt;
  const end = start + m.operationsMs;
  const events: [number, string][] = [[m.seenAt, "change seen by the bench's watch"]];
  for (const e of m.requests) {
    const path = e.path.replace(`/api/v2/projects/${m.projectId}`, "").replace(/^\/api\/v2/, "");
    events.push([receivedAt(e), `${e.method} ${path} → ${e.status}`]);
  }
  if (m.operationsMs > 0) {
    const ops = m.operations.map((op) => `${op.action} ${op.total_duration_ms} ms`).join(", ");
    events.push([end, `the last operation ends (${ops}, from the request)`]);
  }
  if (m.doneAt !== undefined) events.push([m.doneAt, `${m.kind === "delete" ? "gone" : "Ready"} seen`]);
  const at = (t: number) => {
    const fromStart = `${t >= start ? "+" : "−"}${(Math.abs(t - start) / 1000).toFixed(2)} s`;
    return m.platformMs > 0 && t > end ? `${fromStart} (end +${((t - end) / 1000).toFixed(2)} s)` : fromStart;
  };
  return events.sort((a, b) => a[0] - b[0]).map(([t, what]) => `${at(t).padEnd(24)} ${what}`);
}

async function runClient(lab: Lab, client: Client, workDir: string): Promise<Measured[]> {
  const projects = Array.from({ length: repeats }, (_, i) => ({
    id: projectOf(i),
    name: projectOf(i),
    branches: [{ id: `br-lat-${i}`, name: "main" }],
  }));
  const emulator = await startEmulator({
    seed: { projects },
    operationDurationMs: operationMs,
    operationDurationJitter: jitter,
    randomSeed,
    lockScope: "project",
    requestLogSize: 100_000,
    postgres: false,
  });
  const namespace = `lat-${client.label}`;
  const { watch, operator } = await operatorInNamespace(lab, {
    namespace,
    apiKey: emulator.bootstrapKey,
    platformUrl: emulator.url,
    logFile: join(workDir, `operator-${client.label}.log`),
    flags: client.flags,
  });
  // The pauses between changes are drawn so a change falls anywhere between the operator's poll ticks.
  const pause = seededRandom(randomSeed);
  const measured: Measured[] = [];
  try {
    for (let repeat = 0; repeat < repeats; repeat++) {
      for (const kind of kinds) {
        await sleep(Math.round(pause() * 5_000));
        if (operator.sample() === undefined) throw new Error("the operator process ended");
        const m = await measure(lab, emulator, watch, namespace, repeat, kind);
        measured.push(m);
        const wait = addedWait(m);
        say(
          `  ${client.label}: ${kind} #${repeat + 1}: ${m.doneAt === undefined ? "timed out" : `done ${seconds(m.doneAt - m.seenAt)} after the change`}, platform ${seconds(m.platformMs)}, added ${seconds(wait)}, ${m.requests.length} requests (${requestSummary(m.requests)})`,
        );
        if (values.trace) for (const line of timeline(m)) say(`      ${line}`);
      }
    }
    // What the operator sent after a change was done and before the next began (counted apart).
    const log = emulator.requestLog.latest().filter((e) => !byBench(e));
    measured.forEach((m, i) => {
      const next = measured[i + 1];
      const from = m.doneAt ?? Number.POSITIVE_INFINITY;
      const to = next && next.projectId === m.projectId ? next.appliedAt : Date.now();
      m.trailing = log.filter(
        (e) => e.path.includes(`/projects/${m.projectId}/`) && receivedAt(e) > from && receivedAt(e) < to,
      ).length;
    });
  } finally {
    await operator.stop();
    await watch.stop();
    await emulator.close();
  }
  return measured;
}

/** Seconds with two decimals; a wait rounded to nothing is 0.00, not −0.00. */
const fmt = (ms: number | undefined) =>
  ms === undefined ? "–" : `${(ms / 1000).toFixed(2).replace(/^-(0\.00)$/, "$1")} s`;
const median = (xs: readonly (number | undefined)[]) =>
  percentile(
    xs.filter((x): x is number => x !== undefined),
    50,
  );
const worst = (xs: readonly (number | undefined)[]) => {
  const defined = xs.filter((x): x is number => x !== undefined);
  return defined.length === 0 ? undefined : Math.max(...defined);
};

function render(results: Map<Client, Measured[]>, startedAt: Date): string {
  const lines: string[] = [
    "## Single changes",
    "",
    `\`${asRun("bench:latency")}\` (scripts/bench/latency.ts) at ${revision}: one change at a time, each alone in an otherwise idle project; ${repeats} of each kind, one endpoint per project going through create, resize (\`computeUnits.min\` 1 → 2, which restarts it: apply_config, suspend_compute, start_compute), suspend, start and delete, with a pause drawn between 0 and 5 s before each (so changes fall anywhere between poll ticks). The emulator's project-wide lock and rate limits, operations of ${operationMs} ms ± ${Math.round(jitter * 100)}% (seed ${randomSeed}); each client a fresh emulator (same seed) and operator process. Run ${startedAt.toISOString()}.`,
    "",
    "_Added wait_: from the change reaching the API server (the bench's watch sees it) to the resource Ready at its generation (gone, for a delete), minus the platform's own time: from the change's accepted request to the end of the last operation it started, from the emulator's operation records (`total_duration_ms`). A delete's own time is nil: the endpoint leaves the platform's list at the DELETE's answer, while the operation that stops its compute goes on (and holds the project's lock); it is shown on the delete's timeline. The first of each kind is the operator's first since it started (it has not yet learned how long that action takes); it is in the median and worst, and shown apart. Requests are the operator's, from its `kubectl apply` to Ready, on the change's project (and `GET /auth`, once per key). Targets of issue 27, printed, never asserted: added wait ≤ 0.5 s median and ≤ 1.5 s worst; a create in ≤ 4 requests.",
    "",
    "The anchors are this operator with `--operation-polling=per-operation`: they look at each operation as the Terraform provider and the SDK do, but they keep the operator's mutation gate, which those clients do not have (they send at once and retry 423s). _Of it before the send_ is from the change to its accepted request; for an anchor it is time the gate held the change (per-operation reads never tell the gate that operations ended: only list passes do), so the anchors' own looking is the rest of the added wait.",
    "",
    "| Change | Client | Done after the change, median | Platform's own time, median | Added wait, median / worst (≤ 0.5 s / ≤ 1.5 s) | Of it before the send, median / worst | First of its kind | Requests per change, median / worst | Requests of the median change |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const kind of kinds) {
    for (const [client, measured] of results) {
      const ms = measured.filter((m) => m.kind === kind);
      const waits = ms.map(addedWait);
      const before = ms.map((m) => parts(m).beforeSendMs);
      const counts = ms.map((m) => m.requests.length);
      const byWait = [...ms].sort((a, b) => (addedWait(a) ?? Infinity) - (addedWait(b) ?? Infinity));
      const mid = byWait[Math.ceil(byWait.length / 2) - 1];
      lines.push(
        `| ${kind} | ${client.description} | ${fmt(median(ms.map((m) => (m.doneAt === undefined ? undefined : m.doneAt - m.seenAt))))} | ${fmt(median(ms.map((m) => m.platformMs)))} | ${fmt(median(waits))} / ${fmt(worst(waits))} | ${fmt(median(before))} / ${fmt(worst(before))} | ${fmt(waits[0])} | ${median(counts) ?? "–"} / ${worst(counts) ?? "–"}${kind === "create" ? " (≤ 4)" : ""} | ${mid ? requestSummary(mid.requests) : "–"} |`,
      );
    }
  }
  const operator = [...results].find(([c]) => c.label === "operator")?.[1] ?? [];
  lines.push(
    "",
    `Requests after a change was done and before the next one (not counted above): ${[...results]
      .map(([c, ms]) => `${c.label} ${ms.reduce((a, m) => a + m.trailing, 0)}`)
      .join(", ")}.`,
    "",
    "What the operator's added wait is made of (medians over the changes of each kind): _before the send_ is from the change to the accepted request (the reconcile, the lists it makes first, the project's turn); _end to look_ is from the end of the last operation to the operator's first look at the platform after it (operations or endpoints); _look to Ready_ is from that look's answer to Ready (or gone) seen (the status write and its watch event); _looks before the end_ are operations looks made while the operations still ran (each a request that could only say \"running\").",
    "",
    "| Change | Before the send | End to look | Look to Ready | Looks before the end, median / worst |",
    "| --- | --- | --- | --- | --- |",
  );
  for (const kind of kinds) {
    const ps = operator.filter((m) => m.kind === kind).map(parts);
    const before = ps.map((p) => p.looksBeforeEnd);
    lines.push(
      `| ${kind} | ${fmt(median(ps.map((p) => p.beforeSendMs)))} | ${fmt(median(ps.map((p) => p.endToLookMs)))} | ${fmt(median(ps.map((p) => p.lookToDoneMs)))} | ${median(before) ?? "–"} / ${worst(before) ?? "–"} |`,
    );
  }
  const creates = operator.filter((m) => m.kind === "create");
  const cold = creates[0];
  const warm = [...creates.slice(1)].sort((a, b) => (addedWait(a) ?? Infinity) - (addedWait(b) ?? Infinity));
  const typical = warm[Math.ceil(warm.length / 2) - 1];
  for (const [title, m] of [
    ["The operator's first create (cold)", cold],
    ["A later create of the operator (the median of the others)", typical],
  ] as const) {
    if (!m) continue;
    lines.push(
      "",
      `${title}, on a timeline: times from the accepted create (the operations' start), and after the last operation's end; requests as the emulator received them.`,
      "",
      "```",
      ...timeline(m),
      "```",
    );
  }
  lines.push("");
  return lines.join("\n");
}

await runInLab(
  "bench:latency",
  {
    prefix: "neon-bench-latency-",
    keep: values.keep,
    intro: (workDir) =>
      `bench:latency: ${repeats} of each change, ${clients.length} clients; work directory ${workDir}`,
  },
  async (lab, workDir) => {
    const startedAt = new Date();
    const results = new Map<Client, Measured[]>();
    for (const client of clients) {
      say(`bench:latency: ${client.description}`);
      results.set(client, await runClient(lab, client, workDir));
    }
    await writeFile(
      join(workDir, "latency.json"),
      JSON.stringify(
        [...results].map(([c, ms]) => ({ client: c.label, changes: ms })),
        null,
        1,
      ),
    );
    const section = render(results, startedAt);
    say("");
    say(section);
    if (!values["no-write"]) {
      await writeSection(values.out, section);
      say(`bench:latency: wrote the section of ${values.out}`);
    }
  },
);
