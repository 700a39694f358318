// Which condition reason a user sees for which failure, and which failures wait for a spec change.
import { describe, expect, it } from "vitest";
import {
  BadRequestError,
  LockedError,
  NotFoundError,
  OutcomeUnknownError,
  ProjectBusyError,
  RateLimitedError,
  ServerError,
  UnauthorizedError,
  UnprocessableError,
} from "../../platform/index.ts";
import { CredentialsNotFoundError } from "../credentials.ts";
import { describeFailure, isTerminal, Problem } from "./failures.ts";

const route = "POST /projects/{project_id}/endpoints";

describe("failures: reasons a user can act on", () => {
  it.each([
    [new UnauthorizedError("invalid key", { route, status: 401 }), "Unauthorized", false],
    [new BadRequestError("bad size", { route, status: 400 }), "InvalidSpec", true],
    [new UnprocessableError("branch not ready yet", { route, status: 422 }), "RefusedInCurrentState", false],
    [new LockedError("locked", { route, status: 423 }), "WaitingForProject", false],
    [
      new ProjectBusyError("busy", { route, projectId: "p", retryAfterMs: 2_000 }),
      "WaitingForProject",
      false,
    ],
    [new RateLimitedError("slow down", { route, status: 429 }), "RateLimited", false],
    [new OutcomeUnknownError("reset", { route }), "OutcomeUnknown", false],
    [new NotFoundError("no such branch", { route, status: 404 }), "NotFound", false],
    [new ServerError("boom", { route, status: 503 }), "ReconcileError", false],
    [new CredentialsNotFoundError("Secret ns/key not found"), "CredentialsNotFound", false],
    [
      new Problem("ProjectNotFound", "project p not found", { retryAfterMs: 60_000 }),
      "ProjectNotFound",
      false,
    ],
    [new Problem("InvalidSpec", "spec.x: bad", { terminal: true }), "InvalidSpec", true],
  ])("%s reads as %s (terminal: %s)", (err, reason, terminal) => {
    expect(describeFailure(err).reason).toBe(reason);
    expect(isTerminal(err)).toBe(terminal);
  });

  it("keeps the platform's message and says what it means", () => {
    const failure = describeFailure(
      new UnauthorizedError("invalid or revoked API key", { route, status: 401 }),
    );
    expect(failure.message).toBe("the platform refused the API key (401): invalid or revoked API key");
  });

  it("a locked or busy project is a wait, not a failure of the resource", () => {
    expect(describeFailure(new LockedError("locked", { route, status: 423 })).waiting).toBe(true);
    expect(describeFailure(new UnauthorizedError("no", { route, status: 401 })).waiting).toBeUndefined();
  });
});
