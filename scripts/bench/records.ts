// What the bench reads back from the emulator after (or between) its measurements: a project's
// operations through the public API. The bench's own requests carry an `X-Request-ID` starting
// with `bench-`, so a request log read later can tell them from the operator's.
import { randomUUID } from "node:crypto";
import type { RequestLogEntry } from "../../tools/emulator/index.ts";

export interface OperationRecord {
  id: string;
  endpoint_id?: string;
  action: string;
  status: string;
  created_at: string;
  /** Creation to the last update while settled (the platform's timestamps have whole seconds; this has ms). */
  total_duration_ms: number;
}

const benchPrefix = "bench-";

/** True for a request the bench itself made (not the operator). */
export function byBench(entry: Pick<RequestLogEntry, "request_id">): boolean {
  return entry.request_id.startsWith(benchPrefix);
}

/** Every operation of a project, newest first, through the public API with the run's key. */
export async function operationsOf(
  url: string,
  apiKey: string,
  projectId: string,
): Promise<OperationRecord[]> {
  const all: OperationRecord[] = [];
  let cursor: string | undefined;
  for (let attempt = 0; ;) {
    const query = new URLSearchParams({ limit: "1000", ...(cursor === undefined ? {} : { cursor }) });
    const response = await fetch(`${url}/projects/${projectId}/operations?${query.toString()}`, {
      headers: { authorization: `Bearer ${apiKey}`, "x-request-id": `${benchPrefix}${randomUUID()}` },
    });
    if (!response.ok) {
      // 429: the run's own budget; the bench waits its turn.
      if (++attempt > 20) throw new Error(`listing operations of ${projectId}: ${response.status}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
      continue;
    }
    const page = (await response.json()) as {
      operations: OperationRecord[];
      pagination?: { cursor?: string };
    };
    all.push(...page.operations);
    if (page.operations.length < 1000 || page.pagination?.cursor === undefined) return all;
    cursor = page.pagination.cursor;
  }
}

/** The durations of a project's operations in the order they ran (oldest first). */
export async function durationsOf(url: string, apiKey: string, projectId: string): Promise<number[]> {
  return (await operationsOf(url, apiKey, projectId)).reverse().map((op) => op.total_duration_ms);
}

/** When the emulator began to handle a logged request: its answer's time minus how long it took. */
export function receivedAt(entry: Pick<RequestLogEntry, "time" | "duration_ms">): number {
  return Date.parse(entry.time) - entry.duration_ms;
}
