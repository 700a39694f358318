// Operator replicas as real processes: killed with SIGKILL, stopped with SIGTERM.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { KubeClient } from "./kube.ts";
import { leaseKind } from "./leader.ts";
import {
  createNamespace,
  installCrd,
  loadKubeConfig,
  replicaElection,
  waitFor,
  widgetKind,
  type Widget,
} from "../../test/support/runtime/cluster.ts";

const widgets = widgetKind();
const script = join(import.meta.dirname, "..", "..", "test", "support", "runtime", "replica.ts");

interface Line {
  identity: string;
  event: string;
  name?: string;
  acting?: boolean;
}

function startReplica(ns: string, identity: string) {
  const child = spawn(process.execPath, [script, inject("kubeconfig"), ns, identity], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines: Line[] = [];
  createInterface({ input: child.stdout }).on("line", (l) => lines.push(JSON.parse(l) as Line));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const acting = () => lines.filter((l) => l.event === "acting").at(-1)?.acting === true;
  const reconciled = (name: string) => lines.some((l) => l.event === "reconciled" && l.name === name);
  return { identity, child, lines, exited, acting, reconciled };
}

type Replica = ReturnType<typeof startReplica>;

describe("operator processes on the real API server", () => {
  let client: KubeClient;
  const started: Replica[] = [];

  beforeAll(async () => {
    client = new KubeClient(loadKubeConfig(inject("kubeconfig")));
    await installCrd(client, widgets);
  });
  afterAll(async () => {
    for (const r of started) if (r.child.exitCode === null) r.child.kill("SIGKILL");
    await Promise.all(started.map((r) => r.exited));
  });

  const widget = (ns: string, name: string, size = 0): Widget => ({
    apiVersion: "runtime-test.neoncloud.dev/v1",
    kind: "Widget",
    metadata: { name, namespace: ns },
    spec: { size },
  });

  it("killing the leading process hands over to the standby within the lease duration", async () => {
    const ns = await createNamespace(client, "kill");
    const a = startReplica(ns, "proc-a");
    const b = startReplica(ns, "proc-b");
    started.push(a, b);
    await waitFor(() => a.acting() || b.acting(), "a leader", 30_000);
    const [leader, standby] = a.acting() ? [a, b] : [b, a];
    await client.create(widgets, widget(ns, "before"));
    await waitFor(() => leader.reconciled("before"), "the leader to reconcile");
    expect(standby.acting()).toBe(false);

    leader.child.kill("SIGKILL");
    await leader.exited;
    // The standby may take the lease once it has seen no renewal for a lease
    // duration; allow its retry period twice on top (observation and attempt).
    const bound = replicaElection.leaseDurationMs + 2 * replicaElection.retryPeriodMs + 1_000;
    await waitFor(() => standby.acting(), "the standby to take over", bound);
    await client.create(widgets, widget(ns, "after"));
    await waitFor(() => standby.reconciled("after"), "the new leader to reconcile");

    const startedWhileStandby = [...a.lines, ...b.lines].filter(
      (l) => l.event === "reconcile-start" && !l.acting,
    );
    expect(startedWhileStandby).toEqual([]);
  });

  it("SIGTERM finishes the running reconcile, releases the lease and exits 0", async () => {
    const ns = await createNamespace(client, "sigterm");
    const r = startReplica(ns, "proc-c");
    started.push(r);
    await waitFor(() => r.acting(), "leading", 30_000);
    await client.create(widgets, widget(ns, "slow", 1_000));
    await waitFor(
      () => r.lines.some((l) => l.event === "reconcile-start" && l.name === "slow"),
      "the reconcile to start",
    );
    r.child.kill("SIGTERM");
    expect(await r.exited).toBe(0);
    const events = r.lines.map((l) => `${l.event} ${l.name ?? ""}`.trim());
    expect(events.indexOf("reconciled slow")).toBeGreaterThan(-1);
    expect(events.indexOf("reconciled slow")).toBeLessThan(events.indexOf("stopped"));
    const lease = await client.get<{ metadata: object; spec?: { holderIdentity?: string } }>(
      leaseKind,
      ns,
      replicaElection.name,
    );
    expect(lease?.spec?.holderIdentity ?? "").toBe("");
  });
});
