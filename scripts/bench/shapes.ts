// Workload shapes of the convergence benchmark, and the floor of each: the time no client could
// beat on this run's platform. A shape is N ComputeEndpoints over P projects (each endpoint the
// read-write endpoint of a branch of its own), the operations' mean duration and spread, what a
// running operation locks, and the seed of the emulator's draws (so a run can be repeated).
import { firstBurst } from "../../src/platform/budget.ts";
import { platformRateLimits } from "../../tools/emulator/index.ts";
import { percentile } from "./stats.ts";

export type LockScope = "project" | "branch";

export interface Shape {
  endpoints: number;
  projects: number;
  /** Mean duration of an operation. */
  operationMs: number;
  /** Each operation lasts operationMs × (1 ± jitter), drawn uniformly by the emulator. */
  jitter: number;
  lockScope: LockScope;
  randomSeed: number;
}

/** The shapes issue 27 asks for, side by side: a storm, a mid-size one, one per project, one project. */
export const fullShapes: readonly Pick<Shape, "endpoints" | "projects">[] = [
  { endpoints: 1000, projects: 20 },
  { endpoints: 200, projects: 10 },
  { endpoints: 100, projects: 100 },
  { endpoints: 50, projects: 1 },
];

/** The CI size: a small storm and one endpoint per project. */
export const quickShapes: readonly Pick<Shape, "endpoints" | "projects">[] = [
  { endpoints: 100, projects: 10 },
  { endpoints: 20, projects: 20 },
];

export const shapeSyntax =
  "ENDPOINTSxPROJECTS[,operation-ms=N][,jitter=F][,lock=project|branch][,seed=N], e.g. 200x10,seed=7";

/**
 * Parses `--shape` text. Whatever it leaves out comes from `defaults` (the global flags).
 * Throws with a message naming the bad part.
 */
export function parseShape(text: string, defaults: Omit<Shape, "endpoints" | "projects">): Shape {
  const [size, ...options] = text.split(",").map((part) => part.trim());
  const match = /^(\d+)x(\d+)$/.exec(size ?? "");
  if (!match) throw new Error(`--shape ${text}: expected ${shapeSyntax}`);
  const shape: Shape = { ...defaults, endpoints: Number(match[1]), projects: Number(match[2]) };
  for (const option of options) {
    const [key, value = ""] = option.split("=", 2);
    const n = Number(value);
    if (key === "operation-ms" && n > 0) shape.operationMs = n;
    else if (key === "jitter" && n >= 0 && n < 1 && value !== "") shape.jitter = n;
    else if (key === "lock" && (value === "project" || value === "branch")) shape.lockScope = value;
    else if (key === "seed" && Number.isSafeInteger(n) && n > 0) shape.randomSeed = n;
    else throw new Error(`--shape ${text}: cannot read "${option}" (expected ${shapeSyntax})`);
  }
  if (shape.endpoints < 1 || shape.projects < 1 || shape.projects > shape.endpoints) {
    throw new Error(`--shape ${text}: needs at least one endpoint per project`);
  }
  return shape;
}

/** `200 over 10, project lock, 2000 ms ± 25%, seed 2026` */
export function describeShape(s: Shape): string {
  return `${s.endpoints} over ${s.projects}, ${s.lockScope} lock, ${s.operationMs} ms ± ${Math.round(s.jitter * 100)}%, seed ${s.randomSeed}`;
}

/** A name usable in Kubernetes and platform ids: `s2-200x10`. */
export function shapeLabel(s: Shape, index: number): string {
  return `s${index}-${s.endpoints}x${s.projects}${s.lockScope === "branch" ? "-branch" : ""}`;
}

/**
 * When the k-th of `count` requests to one route could be admitted at the earliest, by the
 * emulator's limits (the platform's published ones: 700 a minute per account, bursts of 40 a
 * second per route), as token buckets that start full, as the emulator's do. Milliseconds from
 * the first request.
 */
export function admissionTimes(count: number, limits = platformRateLimits): number[] {
  const bucket = (capacity: number, perMs: number) => ({ capacity, perMs, tokens: capacity, at: 0 });
  const account = bucket(limits.perMinute, limits.perMinute / 60_000);
  const route = bucket(limits.perRoutePerSecond, limits.perRoutePerSecond / 1000);
  const times: number[] = [];
  let now = 0;
  for (let k = 0; k < count; k++) {
    // The earliest moment both buckets hold a token.
    const ready = (b: typeof account) => (b.tokens >= 1 ? now : b.at + (1 - b.tokens) / b.perMs);
    now = Math.max(now, ready(account), ready(route));
    for (const b of [account, route]) {
      b.tokens = Math.min(b.capacity, b.tokens + (now - b.at) * b.perMs) - 1;
      b.at = now;
    }
    times.push(now);
  }
  return times;
}

/** Durations the emulator drew, per project, in the order the operations ran. */
export type DrawnDurations = ReadonlyMap<string, readonly number[]>;

export interface Floor {
  /** The larger of the two below: no client could have all endpoints Ready sooner on this run's platform. */
  ms: number;
  /** Every create admitted at the platform's limits, plus the shortest operation drawn. */
  rateMs: number;
  /** When the last create could be admitted at the platform's limits. */
  createsMs: number;
  shortestOperationMs: number;
  /** Project lock: the busiest project's operations one after another. Branch lock: the longest operation. */
  operationsMs: number;
  /** One sentence saying how the floor was computed, with its figures. */
  how: string;
  /**
   * A schedule that meets both bounds at once (creates sent as the limits admit them, each to the
   * project free soonest): its all-Ready and its p50. What the shape allows the p50 share to be.
   */
  schedule: { allMs: number; p50Ms: number };
}

/**
 * The floor of a shape from the durations the emulator actually drew. Only creates count against
 * the rate limits: each endpoint needs its create, and any other request is a client's choice.
 */
export function floorOf(shape: Shape, drawn: DrawnDurations): Floor {
  const admitted = admissionTimes(shape.endpoints);
  const createsMs = admitted.at(-1) ?? 0;
  const all = [...drawn.values()].flat();
  const shortestOperationMs = all.length > 0 ? Math.min(...all) : shape.operationMs * (1 - shape.jitter);
  const rateMs = createsMs + shortestOperationMs;
  const sums = [...drawn.values()].map((d) => d.reduce((a, b) => a + b, 0));
  const operationsMs =
    shape.lockScope === "project" ? Math.max(0, ...sums) : all.length > 0 ? Math.max(...all) : 0;
  const ms = Math.max(rateMs, operationsMs);
  const s = (v: number) => `${(v / 1000).toFixed(1)} s`;
  const lockPart =
    shape.lockScope === "project"
      ? `the busiest project's ${Math.max(0, ...[...drawn.values()].map((d) => d.length))} operations one after another, as drawn: ${s(operationsMs)}`
      : `the longest operation drawn (each endpoint on a branch of its own): ${s(operationsMs)}`;
  // For comparison only: the creates as the operator's own budget spends them (budget.ts): its
  // first burst at the route's 40 a second, then an even 700 a minute; a pace the client
  // chooses, so not the floor.
  const pacedMs = Math.max(
    (shape.endpoints / platformRateLimits.perRoutePerSecond) * 1_000,
    (Math.max(0, shape.endpoints - firstBurst(platformRateLimits.perMinute)) / platformRateLimits.perMinute) *
      60_000,
  );
  const how =
    `rate: ${shape.endpoints} creates admitted at the platform's limits (700 a minute per account, bursts of 40 a second per route) by ${s(createsMs)} ` +
    `(at the operator's budget's pace, a first burst then even, by ${s(pacedMs)}), plus the shortest operation drawn (${s(shortestOperationMs)}) = ${s(rateMs)}; ` +
    `operations: ${lockPart}; floor ${s(ms)}`;
  return {
    ms,
    rateMs,
    createsMs,
    shortestOperationMs,
    operationsMs,
    how,
    schedule: floorSchedule(shape, drawn, admitted),
  };
}

/**
 * A schedule at the floor: creates go when the limits admit them, each to the project whose
 * lock frees first (on a branch lock, nothing waits), and an endpoint is Ready when its operation
 * ends. Operations take the durations drawn for their project, in order.
 */
function floorSchedule(
  shape: Shape,
  drawn: DrawnDurations,
  admitted: readonly number[],
): { allMs: number; p50Ms: number } {
  const projects = [...drawn.values()].map((durations) => ({ durations, next: 0, freeAt: 0 }));
  const ready: number[] = [];
  for (const slot of admitted) {
    let best: (typeof projects)[number] | undefined;
    for (const p of projects) {
      if (p.next >= p.durations.length) continue;
      if (!best || p.freeAt < best.freeAt) best = p;
    }
    if (!best) break;
    const send = shape.lockScope === "project" ? Math.max(slot, best.freeAt) : slot;
    const end = send + best.durations[best.next++]!;
    if (shape.lockScope === "project") best.freeAt = end;
    ready.push(end);
  }
  return { allMs: Math.max(0, ...ready), p50Ms: percentile(ready, 50) ?? 0 };
}
