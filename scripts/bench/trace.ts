// Where a convergence run's time went, per project, from the emulator's request log and its
// operations (`--trace`). On a project-wide lock the project's operations run one after another;
// every millisecond between one operation's end and the next mutation's acceptance is the lock
// sitting idle, and every 423 is a request spent on a lock that was still held. Printed, and
// written beside the operator's log; never asserted.
import { writeFile } from "node:fs/promises";
import type { RequestLogEntry } from "../../tools/emulator/index.ts";
import { byBench, operationsOf } from "./records.ts";
import { percentile, seconds, sum } from "./stats.ts";
import type { Placement } from "./workload.ts";

export interface ProjectTrace {
  projectId: string;
  creates: number;
  /** From the apply to the project's first mutation sent. */
  firstSendMs: number;
  /** Sum over operations of the time from one's end to the next accepted mutation. */
  idleMs: number;
  /** Idle time from one operation's end to the next mutation's first attempt (nobody sent). */
  idleBeforeSendMs: number;
  /** 423s answered while the project's own last operation still ran (the gate let one go early). */
  lockedEarly: number;
  /** Sum of the drawn operation durations (the project's serial floor). */
  busyMs: number;
  /** From the project's last operation's end to its last resource Ready. */
  tailMs: number;
  operationLists: number;
  /** Operations lists made after the project's last accepted create (its changes all sent). */
  listsAfterLastSend: number;
  /** 423s by how many creates of the project had been accepted before them (0, 1, 2, 3 or more): the first ones are the gate learning. */
  lockedByTurn: number[];
}

export interface RunTrace {
  projects: ProjectTrace[];
  /** Per Ready reason a resource showed before Ready: how many showed it, and the median time they showed it. */
  reasons: Record<string, { resources: number; p50Ms: number | undefined }>;
  /** Median, over all resources, of apply-to-Ready minus the resource's operation end: how late readiness was seen. */
  readySeenAfterEndP50Ms: number | undefined;
  /** The same, split: operations that ended while their project still had creates to send, and after. */
  readySeenWhileSendingP50Ms: number | undefined;
  readySeenAfterLastSendP50Ms: number | undefined;
}

export async function traceRun(o: {
  url: string;
  apiKey: string;
  log: readonly RequestLogEntry[];
  placements: readonly Placement[];
  /** Resource name -> when it was first Ready (epoch ms). */
  readyAt: ReadonlyMap<string, number | undefined>;
  /** Resource name -> the Ready reasons it showed, in order, with when each was first seen. */
  reasons: ReadonlyMap<string, readonly { at: number; reason: string }[]>;
  appliedAt: number;
  file: string;
}): Promise<RunTrace> {
  const projectIds = [...new Set(o.placements.map((p) => p.projectId))];
  const projects: ProjectTrace[] = [];
  const readySeenAfterEnd: number[] = [];
  const readySeenWhileSending: number[] = [];
  const readySeenAfterLastSend: number[] = [];
  for (const projectId of projectIds) {
    const operations = (await operationsOf(o.url, o.apiKey, projectId)).reverse();
    const path = `/api/v2/projects/${projectId}/`;
    const mine = o.log
      .filter((e) => e.path.startsWith(path) && !byBench(e))
      .map((e) => ({ ...e, at: Date.parse(e.time) }))
      .sort((a, b) => a.at - b.at);
    const mutations = mine.filter((e) => e.method !== "GET");
    const accepted = mutations.filter((e) => e.status >= 200 && e.status < 300);
    // The k-th accepted mutation started the k-th operation (one start_compute per create).
    const ends = accepted.map((e, k) => e.at + (operations[k]?.total_duration_ms ?? 0));
    let idleMs = 0;
    let idleBeforeSendMs = 0;
    for (let k = 0; k + 1 < accepted.length; k++) {
      const end = ends[k]!;
      idleMs += Math.max(0, accepted[k + 1]!.at - end);
      const firstAfter = mutations.find((e) => e.at >= end);
      if (firstAfter) idleBeforeSendMs += Math.max(0, firstAfter.at - end);
    }
    const lockedEarly = mutations.filter((e) => e.status === 423).length;
    const lastEnd = ends.at(-1) ?? o.appliedAt;
    const names = o.placements.filter((p) => p.projectId === projectId).map((p) => p.name);
    const readies = names.flatMap((n) => {
      const t = o.readyAt.get(n);
      return t === undefined ? [] : [t];
    });
    // Readiness is per resource; the resources of a project became Ready in the order of their operations' ends.
    const sortedReady = [...readies].sort((a, b) => a - b);
    const lastSend = accepted.at(-1)?.at ?? o.appliedAt;
    sortedReady.forEach((t, i) => {
      const end = ends[i];
      if (end === undefined) return;
      readySeenAfterEnd.push(t - end);
      (end < lastSend ? readySeenWhileSending : readySeenAfterLastSend).push(t - end);
    });
    const lockedByTurn = [0, 0, 0, 0];
    for (const e of mutations) {
      if (e.status !== 423) continue;
      const before = accepted.filter((a) => a.at < e.at).length;
      lockedByTurn[Math.min(3, before)]!++;
    }
    const lists = mine.filter((e) => e.route.endsWith("/operations") && e.method === "GET");
    projects.push({
      projectId,
      creates: accepted.length,
      firstSendMs: (mutations[0]?.at ?? o.appliedAt) - o.appliedAt,
      idleMs,
      idleBeforeSendMs,
      lockedEarly,
      busyMs: sum(operations.map((op) => op.total_duration_ms)),
      tailMs: Math.max(0, ...readies) - lastEnd,
      operationLists: lists.length,
      listsAfterLastSend: lists.filter((e) => e.at > lastSend).length,
      lockedByTurn,
    });
  }
  const spans = new Map<string, number[]>();
  for (const shown of o.reasons.values()) {
    shown.forEach(({ at, reason }, i) => {
      const until = shown[i + 1]?.at;
      if (until === undefined) return;
      spans.set(reason, [...(spans.get(reason) ?? []), until - at]);
    });
  }
  const reasons = Object.fromEntries(
    [...spans].map(([reason, ms]) => [reason, { resources: ms.length, p50Ms: percentile(ms, 50) }]),
  );
  const trace = {
    projects,
    reasons,
    readySeenAfterEndP50Ms: percentile(readySeenAfterEnd, 50),
    readySeenWhileSendingP50Ms: percentile(readySeenWhileSending, 50),
    readySeenAfterLastSendP50Ms: percentile(readySeenAfterLastSend, 50),
  };
  await writeFile(o.file, JSON.stringify({ trace, log: o.log }, null, 1));
  return trace;
}

/** A few lines for the terminal. */
export function describeTrace(trace: RunTrace): string[] {
  const p = trace.projects;
  const n = p.length || 1;
  const avg = (f: (t: ProjectTrace) => number) => seconds(sum(p.map(f)) / n);
  const worst = [...p].sort((a, b) => b.busyMs + b.idleMs - (a.busyMs + a.idleMs))[0];
  return [
    `trace: per project (mean of ${p.length}): first mutation ${avg((t) => t.firstSendMs)} after the apply; operations ${avg((t) => t.busyMs)}; lock idle between them ${avg((t) => t.idleMs)} (of it ${avg((t) => t.idleBeforeSendMs)} before any mutation was sent); tail to last Ready ${avg((t) => t.tailMs)}`,
    `trace: 423s ${sum(p.map((t) => t.lockedEarly))}, by creates of the project accepted before them (0 / 1 / 2 / 3+): ${[0, 1, 2, 3].map((i) => sum(p.map((t) => t.lockedByTurn[i] ?? 0))).join(" / ")}; operations lists ${sum(p.map((t) => t.operationLists))}, of which after the project's last create ${sum(p.map((t) => t.listsAfterLastSend))}`,
    `trace: readiness seen after the operation's end, p50 ${seconds(trace.readySeenAfterEndP50Ms)} (operations that ended while the project still had creates to send: ${seconds(trace.readySeenWhileSendingP50Ms)}; after its last create: ${seconds(trace.readySeenAfterLastSendP50Ms)})`,
    `trace: Ready reasons shown before Ready (resources, median time shown): ${Object.entries(trace.reasons)
      .map(([reason, r]) => `${reason} ${r.resources}, ${seconds(r.p50Ms)}`)
      .join("; ")}`,
    ...(worst
      ? [
          `trace: slowest project ${worst.projectId}: first mutation ${seconds(worst.firstSendMs)}, operations ${seconds(worst.busyMs)}, idle ${seconds(worst.idleMs)}, tail ${seconds(worst.tailMs)}, 423s ${worst.lockedEarly}`,
        ]
      : []),
  ];
}
