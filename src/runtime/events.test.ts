// Aggregated Events: a repeat within the window bumps its Event's series, and once the window has
// passed the series is forgotten (an operator at rest holds none), a repeat then making a new Event.
import { afterEach, describe, expect, it, vi } from "vitest";
import { EventRecorder } from "./events.ts";
import type { KubeClient, KubeObject } from "./kube.ts";

const project: KubeObject = {
  apiVersion: "neoncloud.dev/v1alpha1",
  kind: "Project",
  metadata: { name: "tenant-1", namespace: "tenants", uid: "u-1" },
};
const adopted = {
  type: "Normal",
  reason: "Adopted",
  action: "Adopt",
  note: "adopted project tenant-1",
} as const;

function recorder() {
  const created: string[] = [];
  const patched: string[] = [];
  const client = {
    create: (_kind: unknown, event: KubeObject) => {
      created.push(event.metadata.name ?? "");
      return Promise.resolve(event);
    },
    patch: (_kind: unknown, _ns: string, name: string) => {
      patched.push(name);
      return Promise.resolve({});
    },
  } as unknown as KubeClient;
  const events = new EventRecorder(client, {
    controller: "test",
    instance: "test-1",
    aggregationWindowMs: 60_000,
    minWriteIntervalMs: 1_000,
  });
  return { events, created, patched };
}

describe("event series", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a repeat within the window bumps the Event; after it a repeat is a new Event", async () => {
    vi.useFakeTimers();
    const { events, created, patched } = recorder();
    events.record(project, adopted);
    await vi.advanceTimersByTimeAsync(10_000);
    events.record(project, adopted);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(created).toHaveLength(1);
    expect(patched).toEqual([created[0]]);
    expect(events.seriesHeld).toBe(1);
    // The window passes with nothing recorded: the sweep forgets the series, and stops.
    await vi.advanceTimersByTimeAsync(120_000);
    expect(events.seriesHeld).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    events.record(project, adopted);
    expect(created).toHaveLength(2);
    expect(created[1]).not.toBe(created[0]);
    await events.flush();
  });
});
