// Keys waiting out an API server that does not answer: retried as soon as it answers again.
import { describe, expect, it } from "vitest";
import { KubeUnreachableError } from "./kube.ts";
import { silentLogger } from "./log.ts";
import { ApiServerOutage } from "./outage.ts";

describe("an API server outage", () => {
  it("retries the waiting keys once the probe gets any answer, and not before", async () => {
    let answers = 0;
    const retried: string[][] = [];
    const outage = new ApiServerOutage(
      () =>
        ++answers < 3 ? Promise.reject(new KubeUnreachableError("connection refused")) : Promise.resolve(),
      (keys) => retried.push(keys),
      silentLogger,
    );
    outage.wait("ns/a");
    outage.wait("ns/b");
    outage.release("ns/b");
    await expect.poll(() => retried, { timeout: 5_000 }).toEqual([["ns/a"]]);
    expect(answers).toBe(3);
    outage.stop();
  });

  it("a watch reconnecting is an answer too; stopped, nothing waits", () => {
    const retried: string[][] = [];
    const outage = new ApiServerOutage(
      () => new Promise(() => undefined),
      (keys) => retried.push(keys),
      silentLogger,
    );
    outage.wait("ns/a");
    outage.answered();
    expect(retried).toEqual([["ns/a"]]);
    outage.stop();
    outage.answered();
    expect(retried).toHaveLength(1);
  });
});
