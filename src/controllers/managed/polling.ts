// When a resource looks again. Polls fall on shared ticks of the poll interval, so every resource
// waiting on the same work looks at the same moment and one request can answer them all; a
// resource may ask to be looked at more often than the resync (its annotation).
import { observeIntervalAnnotation } from "../../api/group.ts";
import { parseDuration, type KubeObject } from "../../runtime/index.ts";

/** The next shared tick of `intervalMs`, at least half an interval away. */
export function nextPoll(intervalMs: number, now = Date.now()): number {
  const tick = Math.max(intervalMs, 1);
  const untilTick = tick - (now % tick);
  return untilTick < tick / 2 ? untilTick + tick : untilTick;
}

/** The resource's own drift-observation interval (its annotation), when it sets a valid one. */
export function observeInterval(obj: KubeObject): number | undefined {
  const override = obj.metadata.annotations?.[observeIntervalAnnotation];
  const ms = override ? parseDuration(override) : undefined;
  return ms !== undefined && ms > 0 ? ms : undefined;
}
