// Where the connection Secret's password comes from, and when it is asked for: a pass looks at
// the Secret's metadata (cached) and asks the platform only when the Secret is missing, was
// written for something else, or a password reset is due or under way. A read is one request
// (`connection_uri`: the address the platform names, with the password); a project that does not
// store passwords gives one only by a reset, which needs the user's consent
// (`allowPasswordReset`) or a rotation request (the `rotatePasswordAt` annotation). A reset's new
// password is held in memory until its operations finish (the old one is valid until then); a
// reset whose answer was lost, or whose holder crashed, is resolved on the next pass by reading
// the password again, or, where none is stored, by resetting again.
import type { ComputeEndpointStatus, ResolvedComputeEndpointSpec } from "../api/computeendpoint.ts";
import { rotatePasswordAtAnnotation } from "../api/group.ts";
import {
  NotFoundError,
  PasswordNotStoredError,
  type Operation,
  type PlatformClient,
} from "../platform/index.ts";
import { nextPoll } from "./computeendpoint-polling.ts";
import { branchResets } from "./branch-reset.ts";
import { branchResourceKind, type BranchObject } from "./branch.ts";
import {
  branchResetAnnotation,
  checkOwnership,
  connectionOf,
  isCurrent,
  passwordOf,
  parseConnectionUri,
  writeConnectionSecret,
  type Connection,
  type SecretTarget,
} from "./computeendpoint-secret.ts";
import { secretKind, type Secret } from "./credentials.ts";
import { Problem } from "./managed/failures.ts";
import { describeOperations, mutationOptions } from "./managed/operations.ts";
import type { Pass, Published } from "./managed/types.ts";
import { isControlledBy, type KubeObject } from "../runtime/index.ts";

type S = ComputeEndpointStatus;
type CePass = Pass<ResolvedComputeEndpointSpec, S>;
type Recorded = NonNullable<S["connectionSecret"]>;

/** Why a reset is sent: a rotation the user asked for, or a password the project does not store. */
export type ResetReason = "Rotation" | "NotStored";

/** What a pass does about the connection Secret. */
export type SecretStep =
  { step: "none" } | { step: "read"; orReset?: ResetReason } | { step: "reset"; why: ResetReason };

export interface SecretFacts {
  /** The Secret exists and was written for the current target. */
  current: boolean;
  /** The Secret exists (ours). */
  exists: boolean;
  recorded: Recorded | undefined;
  /** The rotatePasswordAt annotation's value. */
  rotateAt: string | undefined;
}

/**
 * The one decision (pure): a rotation asked for once the Secret exists resets; a reset whose new
 * password was lost is read again (or, where none is stored, reset again: the user asked for it);
 * a Secret that is current needs nothing; anything else reads.
 */
export function secretStep(f: SecretFacts): SecretStep {
  const rotation = f.rotateAt !== undefined && f.rotateAt !== f.recorded?.passwordRotatedAt;
  // A rotation whose new password was lost is sent again: whether the lost one was applied cannot
  // be told, and the user asked for a new password.
  if (f.recorded?.passwordReset === "Rotation") return { step: "reset", why: "Rotation" };
  if (f.recorded?.passwordReset === "NotStored") return { step: "read", orReset: "NotStored" };
  if (rotation && f.exists) return { step: "reset", why: "Rotation" };
  if (f.current) return { step: "none" };
  return { step: "read" };
}

/** A reset's new password, kept until its operations finish. Only in memory. */
interface Held {
  target: string;
  password: string;
  operations: Operation[];
  why: ResetReason;
}

export class ConnectionSecrets {
  private readonly held = new Map<string, Held>();
  /** What this replica last wrote per resource (`writtenKey`). */
  private readonly written = new Map<string, string>();

  /** Keeps the Secret current; returns when to look again while a reset's operations run. */
  async publish(pass: CePass): Promise<Published | undefined> {
    const want = pass.spec.connectionSecret;
    const status = pass.status;
    await this.dropPrevious(pass);
    if (!want || !status.endpointId || !status.host) return undefined;
    const branchId = status.branchId ?? pass.spec.branchId;
    const namespace = pass.obj.metadata.namespace;
    const resets = branchResets(
      pass.cache<BranchObject>(branchResourceKind),
      namespace,
      branchId,
      pass.spec.branchRef?.name,
    );
    const target: SecretTarget = {
      name: want.name,
      projectId: pass.spec.projectId,
      branchId,
      endpointId: status.endpointId,
      host: status.host,
      pooledHost: status.pooledHost ?? status.host,
      role: want.role,
      database: want.database,
      branchReset: resets.marker,
    };
    const uid = pass.obj.metadata.uid ?? "";
    const secret = pass.cache<Secret>(secretKind).get(namespace, want.name);
    checkOwnership(secret, pass.obj, want.name);
    // The branch was reset and its Branch is bringing its roles back: the password is read once
    // the Branch is Ready again (which wakes this resource), not while the role may be missing.
    if (resets.settling && secret && secret.metadata.annotations?.[branchResetAnnotation] !== resets.marker) {
      return undefined;
    }

    const held = this.held.get(uid);
    if (held && held.target === targetKey(target)) return this.finishReset(pass, target, held);
    this.held.delete(uid);

    const recorded = status.connectionSecret;
    const rotateAt = pass.obj.metadata.annotations?.[rotatePasswordAtAnnotation];
    // Right after this replica's own write the cache may not show it yet: then the Secret itself
    // (one Kubernetes read, no platform request) tells whether it still is as written.
    let shown: KubeObject | undefined = secret;
    if (this.written.get(uid) === writtenKey(target) && !isCurrent(secret, target)) {
      shown = await pass.kube.get<Secret>(secretKind, pass.obj.metadata.namespace, want.name);
    }
    const step = secretStep({
      current: isCurrent(shown, target) && recorded?.name === want.name,
      exists: shown !== undefined,
      recorded,
      rotateAt,
    });
    if (step.step === "none") return undefined;
    if (step.step === "reset") return this.reset(pass, target, step.why);
    let connection: Connection;
    try {
      connection = await this.read(pass.client, target, pass.signal);
    } catch (err) {
      if (!(err instanceof PasswordNotStoredError)) throw err;
      const why = step.orReset ?? (want.allowPasswordReset ? "NotStored" : undefined);
      if (why === undefined || pass.spec.managementPolicy === "ObserveOnly") {
        throw new Problem(
          "PasswordNotStored",
          `project ${target.projectId} does not store role passwords, so the password of role ${target.role} ` +
            (pass.spec.managementPolicy === "ObserveOnly"
              ? "can only be reset, which an observe-only resource never does"
              : "can only be reset, which drops its live connections: set spec.connectionSecret.allowPasswordReset to true to allow it"),
          { retryAfterMs: 600_000, stalled: true },
        );
      }
      return this.reset(pass, target, why);
    }
    await this.write(pass, target, connection, rotateAt);
    return undefined;
  }

  /**
   * A Secret written under another name (the spec renamed it, or no longer asks for one) is
   * deleted, so no stale copy of the password stays behind; one this resource does not control
   * is left alone.
   */
  private async dropPrevious(pass: CePass): Promise<void> {
    const previous = pass.status.connectionSecret?.name;
    const want = pass.spec.connectionSecret;
    if (previous === undefined || previous === want?.name) return;
    const namespace = pass.obj.metadata.namespace;
    const old = pass.cache<Secret>(secretKind).get(namespace, previous);
    if (old && isControlledBy(old, pass.obj)) await pass.kube.delete(secretKind, namespace, previous);
    if (!want) await pass.save({ connectionSecret: undefined });
    this.written.delete(pass.obj.metadata.uid ?? "");
  }

  /** Forgets what is held for a resource that is gone. */
  forget(uid: string): void {
    this.held.delete(uid);
    this.written.delete(uid);
  }

  /**
   * The password and address as the platform names them: one `connection_uri` request; a second
   * for the pooled address only when the platform names a host other than the endpoint's (then the
   * pooler's `-pooler` host cannot be derived).
   */
  private async read(client: PlatformClient, target: SecretTarget, signal: AbortSignal): Promise<Connection> {
    const query = {
      branchId: target.branchId,
      endpointId: target.endpointId,
      databaseName: target.database,
      roleName: target.role,
    };
    const uri = await client.connectionUri(target.projectId, query, { signal }).catch((err: unknown) => {
      if (!(err instanceof NotFoundError)) throw err;
      throw new Problem(
        "ConnectionTargetNotFound",
        `role "${target.role}" or database "${target.database}" not found on branch ${target.branchId}: ${err.message}`,
        { retryAfterMs: 60_000, stalled: true },
      );
    });
    const direct = parseConnectionUri(uri);
    if (!direct.password) {
      throw new PasswordNotStoredError("the platform's connection URI carries no password", {
        route: "GET /projects/{project_id}/connection_uri",
      });
    }
    if (direct.host === target.host) {
      return { ...direct, pooledHost: target.pooledHost, pooledPort: direct.port };
    }
    const pooled = parseConnectionUri(
      await client.connectionUri(target.projectId, { ...query, pooled: true }, { signal }),
    );
    return { ...direct, pooledHost: pooled.host, pooledPort: pooled.port };
  }

  private async reset(pass: CePass, target: SecretTarget, why: ResetReason): Promise<Published | undefined> {
    if (pass.spec.managementPolicy === "ObserveOnly") {
      throw new Problem(
        "ObserveOnly",
        `a password reset of role ${target.role} was asked for (${why}), and an observe-only resource changes nothing on the platform`,
        { retryAfterMs: 600_000, stalled: true },
      );
    }
    const recorded = pass.status.connectionSecret ?? {};
    // Intent first: a crash or a lost answer after this leaves a mark the next pass resolves.
    if (recorded.passwordReset !== why) {
      await pass.save({ connectionSecret: { ...recorded, passwordReset: why } });
    }
    const result = await pass.client.resetPassword(
      target.projectId,
      target.branchId,
      target.role,
      mutationOptions(pass),
    );
    const rotateAt = pass.obj.metadata.annotations?.[rotatePasswordAtAnnotation];
    pass.events.normal(
      "PasswordReset",
      "ResetPassword",
      `reset the password of role ${target.role} (${
        why === "Rotation"
          ? `${rotatePasswordAtAnnotation}=${rotateAt ?? ""}`
          : "the project does not store passwords; spec.connectionSecret.allowPasswordReset is true"
      }); the Secret gets it when ${describeOperations(result.operations) || "the reset"} finishes`,
    );
    const held: Held = {
      target: targetKey(target),
      password: result.password,
      operations: result.operations,
      why,
    };
    this.held.set(pass.obj.metadata.uid ?? "", held);
    if (why === "Rotation") {
      await pass.save({
        connectionSecret: { ...pass.status.connectionSecret, passwordRotatedAt: rotateAt },
      });
    }
    return this.finishReset(pass, target, held);
  }

  /** Once the reset's operations finish, the held password goes into the Secret. */
  private async finishReset(pass: CePass, target: SecretTarget, held: Held): Promise<Published | undefined> {
    if (held.operations.length > 0) {
      const outcome = await pass.client.waitForOperations(target.projectId, held.operations);
      if (outcome.state === "running") return { requeueAfterMs: nextPoll(outcome.retryAfterMs) };
      if (outcome.state === "failed") {
        this.held.delete(pass.obj.metadata.uid ?? "");
        throw new Problem(
          "PasswordResetFailed",
          `the password reset's operation ${describeOperations(outcome.failed)} failed; trying again`,
        );
      }
    }
    this.held.delete(pass.obj.metadata.uid ?? "");
    // The address as the platform names it needs no password: only a project that stores none
    // answers without one (then the endpoint's own hosts, on the standard port).
    let connection: Connection;
    try {
      connection = { ...(await this.read(pass.client, target, pass.signal)), password: held.password };
    } catch (err) {
      if (!(err instanceof PasswordNotStoredError)) throw err;
      connection = {
        host: target.host,
        port: 5432,
        pooledHost: target.pooledHost,
        pooledPort: 5432,
        user: target.role,
        password: held.password,
        database: target.database,
        sslmode: "require",
      };
    }
    await this.write(pass, target, connection, pass.obj.metadata.annotations?.[rotatePasswordAtAnnotation]);
    return undefined;
  }

  private async write(
    pass: CePass,
    target: SecretTarget,
    connection: Connection,
    rotateAt: string | undefined,
  ): Promise<void> {
    await writeConnectionSecret(pass.kube, pass.obj, target, connection);
    this.written.set(pass.obj.metadata.uid ?? "", writtenKey(target));
    const recorded = pass.status.connectionSecret;
    // The first Secret takes the annotation as acted upon (as restartedAt on creation): a
    // manifest that carries it from the start does not reset a fresh password.
    const next: Recorded = {
      name: target.name,
      role: target.role,
      database: target.database,
      passwordRotatedAt: recorded?.name === undefined ? rotateAt : recorded.passwordRotatedAt,
    };
    if (
      !recorded ||
      recorded.name !== next.name ||
      recorded.role !== next.role ||
      recorded.database !== next.database ||
      recorded.passwordRotatedAt !== next.passwordRotatedAt ||
      recorded.passwordReset !== undefined
    ) {
      await pass.save({ connectionSecret: next });
    }
    pass.events.normal(
      "ConnectionSecretWritten",
      "WriteSecret",
      `wrote Secret ${target.name} for role ${target.role}`,
    );
  }
}

function writtenKey(t: SecretTarget): string {
  return `${passwordOf(t)}|${connectionOf(t)}|${t.branchReset ?? ""}`;
}

function targetKey(t: SecretTarget): string {
  return `${t.name}/${t.projectId}/${t.branchId}/${t.role}`;
}
