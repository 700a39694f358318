import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { TerminalError } from "./errors.ts";
import { createLogger, inReconcile } from "./log.ts";

function capture() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write: (chunk: Buffer, _enc, done) => {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean))
        lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, log: createLogger("debug", sink) };
}

describe("operator logs", () => {
  it("name the object and the reconcile on every line, however deep and however late in the pass", async () => {
    const { lines, log } = capture();
    // A component that got the root logger long ago, like the platform client.
    const platformLog = log.child({ component: "platform" });
    const ids = await Promise.all(
      ["a", "b"].map((name) =>
        inReconcile({ kind: "ComputeEndpoint", namespace: "team", name }, async () => {
          await new Promise((r) => setTimeout(r, 5));
          platformLog.debug({ route: "/projects/{project_id}/endpoints" }, "platform request");
          return name;
        }),
      ),
    );
    log.info("outside any reconcile");
    expect(ids).toEqual(["a", "b"]);
    const requests = lines.filter((l) => l.msg === "platform request");
    expect(requests.map((l) => [l.controllerKind, l.namespace, l.name])).toEqual(
      expect.arrayContaining([
        ["ComputeEndpoint", "team", "a"],
        ["ComputeEndpoint", "team", "b"],
      ]),
    );
    expect(requests[0]?.reconcileID).not.toBe(requests[1]?.reconcileID);
    expect(lines.find((l) => l.msg === "outside any reconcile")).not.toHaveProperty("reconcileID");
  });

  it("log every error in one shape: err with type and message, whether given an Error or its text", () => {
    const { lines, log } = capture();
    log.error({ err: new TerminalError("invalid spec: computeUnits.min") }, "reconcile failed terminally");
    log.warn({ err: "the platform refused the API key (401)" }, "reconcile failed");
    expect(lines[0]?.err).toMatchObject({ type: "TerminalError", message: "invalid spec: computeUnits.min" });
    expect(lines[1]?.err).toEqual({ type: "Error", message: "the platform refused the API key (401)" });
  });
});
