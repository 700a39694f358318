// What every failure means, as one table: each answer of the platform read as a refusal, and each
// kind of refusal's outcome (Stalled or not, a wait or a failure, when it is tried again).
import { describe, expect, it } from "vitest";
import {
  BadRequestError,
  ForbiddenError,
  LockedError,
  NotFoundError,
  OutcomeUnknownError,
  PasswordNotStoredError,
  ProjectBusyError,
  RateLimitedError,
  UnauthorizedError,
  UnprocessableError,
} from "../platform/index.ts";
import { CredentialsNotFoundError } from "./managed/credentials.ts";
import { Refusal, describeFailure, errorAction, type Retry } from "./managed/refusal.ts";
import { readFile } from "node:fs/promises";
import { controllersDoc, withFailureTables } from "../../scripts/controllers-doc.ts";
import { platformRefusal } from "./refusals.ts";

const route = { route: "POST /things", status: 0 };
const minute = { backoff: { from: 5_000, max: 60_000 } };

describe("what each failure means", () => {
  it.each<[string, unknown, string, boolean, Retry, boolean]>([
    [
      "a refusal of the kind, of the world outside the spec",
      new Refusal("ThingNotFound", "outside", "gone"),
      "ThingNotFound",
      true,
      minute,
      false,
    ],
    [
      "a refusal of the spec as it stands",
      new Refusal("InvalidSpec", "spec", "no"),
      "InvalidSpec",
      true,
      "onChange",
      false,
    ],
    [
      "a spec the platform refuses (400)",
      new BadRequestError("bad", route),
      "InvalidSpec",
      true,
      "onChange",
      false,
    ],
    [
      "a key the platform refuses (401)",
      new UnauthorizedError("no", route),
      "Unauthorized",
      true,
      { after: 300_000 },
      false,
    ],
    [
      "a key refused access to an object (403)",
      new ForbiddenError("no", route),
      "Forbidden",
      true,
      minute,
      false,
    ],
    [
      "something the platform does not have (404)",
      new NotFoundError("no", route),
      "NotFound",
      true,
      minute,
      false,
    ],
    [
      "a project that stores no passwords (412)",
      new PasswordNotStoredError("no", route),
      "PasswordNotStored",
      true,
      minute,
      false,
    ],
    [
      "a refusal in the current state (422)",
      new UnprocessableError("not now", route),
      "RefusedInCurrentState",
      false,
      { backoff: { from: 3_000 } },
      false,
    ],
    [
      "a busy project (423): a wait, not a failure",
      new LockedError("busy", { ...route, retryAfterMs: 3_000 }),
      "WaitingForProject",
      false,
      { after: 3_000 },
      true,
    ],
    [
      "its turn in the gate: a wait",
      new ProjectBusyError("turn", { ...route, retryAfterMs: 2_000, projectId: "p" }),
      "WaitingForProject",
      false,
      { after: 2_000 },
      true,
    ],
    [
      "the rate limit (429) with a hint",
      new RateLimitedError("slow", { ...route, retryAfterMs: 1_000 }),
      "RateLimited",
      false,
      { after: 1_000 },
      false,
    ],
    [
      "a lost answer",
      new OutcomeUnknownError("lost", route),
      "OutcomeUnknown",
      false,
      { backoff: { from: 3_000 } },
      false,
    ],
    [
      "a credentials Secret not found",
      new CredentialsNotFoundError("no Secret"),
      "CredentialsNotFound",
      true,
      minute,
      false,
    ],
    ["anything else", new Error("boom"), "ReconcileError", false, { backoff: { from: 3_000 } }, false],
  ])("%s", (_, err, reason, stalled, retry, waiting) => {
    const failure = describeFailure(err, platformRefusal);
    expect(failure.refusal.reason).toBe(reason);
    expect({ stalled: failure.stalled, retry: failure.retry, waiting: failure.waiting }).toEqual({
      stalled,
      retry,
      waiting,
    });
  });

  it("a refusal that waits for the world is tried again on a backoff that reaches a minute and stays there", () => {
    const action = errorAction(
      describeFailure(new Refusal("ProjectLimitReached", "outside", "limit"), platformRefusal),
    );
    expect(action).toEqual({ kind: "backoff", fromMs: 5_000, maxMs: 60_000 });
  });

  it("is the table docs/controllers.md shows (npm run generate writes it)", async () => {
    const doc = await readFile(controllersDoc, "utf8");
    expect(doc).toBe(await withFailureTables(doc));
  });
});
