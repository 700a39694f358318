// Waiting that an AbortSignal cuts short: resolves on time or on abort, never rejects.
import { setTimeout as delay } from "node:timers/promises";

export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return delay(ms, undefined, { signal }).catch(() => undefined);
}
