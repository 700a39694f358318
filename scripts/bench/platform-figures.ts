// What the platform-side benches (bench:branches, bench:projects) share: the connection Secrets
// seen as they appear, the operation durations the emulator drew (the operations' floor), the
// requests by route and status as a table, and a trace of every request.
import { writeFile } from "node:fs/promises";
import { Informer, metadataOnly } from "../../src/runtime/index.ts";
import type { KubeClient, KubeObject, ResourceKind } from "../../src/runtime/index.ts";
import { say } from "./cli.ts";
import { sum } from "./stats.ts";

const secretKind: ResourceKind = { group: "", version: "v1", plural: "secrets", kind: "Secret" };

/** Requests by route, then by status code, as the emulator's request log counts them. */
export type ByRoute = Record<string, Record<string, number>>;

/**
 * Connection Secrets written by resources of `ownerKind` (the label the operator puts on the
 * Secrets it owns, e.g. `neoncloud.dev/computeendpoint`), with when each first appeared; watched
 * as metadata only: the bench never reads a password.
 */
export function watchSecrets(kube: KubeClient, namespace: string, ownerKind: string) {
  const written = new Map<string, number>();
  const informer = new Informer<KubeObject>(kube, secretKind, {
    namespaces: [namespace],
    labelSelector: `neoncloud.dev/${ownerKind.toLowerCase()}`,
    transform: metadataOnly,
  });
  const see = (obj: KubeObject) => {
    const name = obj.metadata.name ?? "";
    if (!written.has(name)) written.set(name, Date.now());
  };
  informer.on({ add: see, update: (_old, obj) => see(obj) });
  return { informer, written };
}

/** The emulator's record of the operation durations it drew, per project (their sum, in ms). */
export async function drawnByProject(adminUrl: string): Promise<number[]> {
  const response = await fetch(`${adminUrl}/operations/durations`);
  const body = (await response.json()) as { projects: Record<string, { drawn_ms: number }> };
  return Object.values(body.projects).map((p) => p.drawn_ms);
}

/** Requests answered with `code`, over every route. */
export function withStatus(byRoute: ByRoute, code: string): number {
  return sum(Object.values(byRoute).map((s) => s[code] ?? 0));
}

/** Requests of one route answered with `code`. */
export function answered(byRoute: ByRoute, route: string, code: string): number {
  return byRoute[route]?.[code] ?? 0;
}

/** The "Requests by route" table of a section. */
export function routeTable(byRoute: ByRoute): string[] {
  return [
    "| Route | Requests by status |",
    "| --- | --- |",
    ...Object.entries(byRoute)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(
        ([route, codes]) =>
          `| \`${route}\` | ${Object.entries(codes)
            .map(([code, n]) => `${code}: ${n}`)
            .join(", ")} |`,
      ),
  ];
}

/** One line per platform request, in order: ms after apply, status, method, path. */
export async function writeTrace(
  command: string,
  path: string,
  requests: readonly { time: string; method: string; path: string; status: number }[],
  started: number,
): Promise<void> {
  const rows = requests.map((r) => [Date.parse(r.time) - started, r.status, r.method, r.path].join("\t"));
  await writeFile(path, `ms\tstatus\tmethod\tpath\n${rows.join("\n")}\n`);
  say(`${command}: ${requests.length} requests traced in ${path}`);
}

/** Milliseconds as seconds with one decimal, or "–". */
export function fmt(ms: number | undefined): string {
  return ms === undefined ? "–" : `${(ms / 1000).toFixed(1)} s`;
}

/** `after` less `before`, route by route and status by status: what was sent in between. */
export function requestsSince(before: ByRoute, after: ByRoute): ByRoute {
  const out: ByRoute = {};
  for (const [route, codes] of Object.entries(after))
    for (const [code, n] of Object.entries(codes)) {
      const d = n - (before[route]?.[code] ?? 0);
      if (d > 0) (out[route] ??= {})[code] = d;
    }
  return out;
}

/** Every request of `byRoute`, whatever its route and status. */
export const requestTotal = (byRoute: ByRoute): number =>
  sum(Object.values(byRoute).flatMap((codes) => Object.values(codes)));
