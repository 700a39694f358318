// Two shards of the operator (--watch-label-selector), each its own process with its own Lease and
// half the account's budget, on one namespace and one platform account: each ComputeEndpoint is
// made and kept by the shard its label names, never by the other; one moved between shards by its
// label is taken over by the new shard, not created again, and only the new shard acts on it then.
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startEmulator, type Emulator } from "../../tools/emulator/index.ts";
import { applyCredentialsSecret } from "../support/credentials.ts";
import { createNamespace, eventually, kubectl } from "../support/kube.ts";
import { OperatorProcess } from "../support/operator-process.ts";
import { testSeed } from "../support/operator.ts";

const label = "neoncloud.dev/shard";
let emulator: Emulator;
let namespace: string;
const shards: Record<"a" | "b", OperatorProcess | undefined> = { a: undefined, b: undefined };

const endpoint = (name: string, shard: string, branchId: string, autosuspend = "5m") => ({
  apiVersion: "neoncloud.dev/v1alpha1",
  kind: "ComputeEndpoint",
  metadata: { name, namespace, labels: { [label]: shard } },
  spec: { projectId: "proj-alpha", branchId, autosuspend },
});

const apply = (objects: object[]) =>
  kubectl(["apply", "-f", "-"], { input: objects.map((o) => JSON.stringify(o)).join("\n") });

async function ready(name: string): Promise<{ endpointId: string }> {
  return eventually(
    async () => {
      const obj = JSON.parse(
        await kubectl(["get", "computeendpoint", name, "-n", namespace, "-o", "json"]),
      ) as {
        metadata: { generation: number };
        status?: {
          endpointId?: string;
          conditions?: { type: string; status: string; observedGeneration?: number }[];
        };
      };
      const c = obj.status?.conditions?.find((x) => x.type === "Ready");
      return c?.status === "True" &&
        c.observedGeneration === obj.metadata.generation &&
        obj.status?.endpointId
        ? { endpointId: obj.status.endpointId }
        : undefined;
    },
    { what: `${name} Ready`, timeoutMs: 60_000 },
  );
}

/** The lines a shard logged while reconciling the resource (each names the object it is about). */
const linesAbout = (shard: OperatorProcess, name: string, from = 0) =>
  shard.lines
    .slice(from)
    .filter((l) => l.includes(`"name":"${name}"`) && l.includes(`"namespace":"${namespace}"`));

const posts = () => emulator.requestLog.counters().by_route["POST /projects/:project_id/endpoints"] ?? {};
/** Endpoints made (a POST refused by the project's lock, 423, makes none). */
const postCount = () => posts()["201"] ?? 0;

beforeAll(async () => {
  emulator = await startEmulator({ rateLimits: false, operationDurationMs: 150, seed: testSeed });
  namespace = await createNamespace("shards");
  await applyCredentialsSecret(namespace, "neon-api-key", emulator.bootstrapKey);
  const start = (shard: "a" | "b", selector: string) =>
    OperatorProcess.start({
      kubeconfig: inject("kubeconfig"),
      platformUrl: emulator.url,
      namespace,
      credentialsSecret: "neon-api-key",
      leaderElection: true,
      flags: [
        `--watch-label-selector=${selector}`,
        `--leader-election-id=neon-cloud-operator-${shard}`,
        "--account-budget-share=0.5",
        "--shard-handover-delay=2s",
      ],
    });
  [shards.a, shards.b] = await Promise.all([start("a", `${label}=a`), start("b", `${label}!=a`)]);
});

afterAll(async () => {
  await Promise.all([shards.a?.kill(), shards.b?.kill()]);
  await emulator?.close();
  await kubectl(["delete", "namespace", namespace, "--wait=false"]).catch(() => undefined);
});

describe("two shards of the operator by label", () => {
  it("each resource is made by the shard its label names, and the other shard never acts on it", async () => {
    await apply([endpoint("in-a", "a", "br-dev"), endpoint("in-b", "b", "br-staging")]);
    await Promise.all([ready("in-a"), ready("in-b")]);
    expect(postCount()).toBe(2);
    expect(linesAbout(shards.a!, "in-a").length).toBeGreaterThan(0);
    expect(linesAbout(shards.b!, "in-b").length).toBeGreaterThan(0);
    expect(linesAbout(shards.a!, "in-b")).toEqual([]);
    expect(linesAbout(shards.b!, "in-a")).toEqual([]);
    // Each holds a Lease of its own: both act at once.
    for (const shard of ["a", "b"]) {
      const holder = await kubectl([
        "get",
        "lease",
        `neon-cloud-operator-${shard}`,
        "-n",
        namespace,
        "-o",
        "jsonpath={.spec.holderIdentity}",
      ]);
      expect(holder).toContain(shards[shard as "a" | "b"]!.name);
    }
  });

  it("one moved from shard a to shard b is taken over, not made again, and changed by shard b alone", async () => {
    await apply([endpoint("moving", "a", "br-feature")]);
    const { endpointId } = await ready("moving");
    const made = postCount();
    const [fromA, fromB] = [shards.a!.lines.length, shards.b!.lines.length];

    await kubectl(["label", "computeendpoint", "moving", "-n", namespace, `${label}=b`, "--overwrite"]);
    await apply([endpoint("moving", "b", "br-feature", "10m")]);
    await eventually(
      async () => {
        const shown = (await fetch(`${emulator.url}/projects/proj-alpha/endpoints/${endpointId}`, {
          headers: { authorization: `Bearer ${emulator.bootstrapKey}` },
        }).then((r) => r.json())) as { endpoint: { suspend_timeout_seconds: number } };
        return shown.endpoint.suspend_timeout_seconds === 600 ? true : undefined;
      },
      { what: "the change made on the platform", timeoutMs: 60_000 },
    );
    expect((await ready("moving")).endpointId).toBe(endpointId);
    expect(postCount()).toBe(made);
    expect(linesAbout(shards.b!, "moving", fromB).length).toBeGreaterThan(0);
    expect(linesAbout(shards.a!, "moving", fromA)).toEqual([]);
  });
});
