// Connection details a resource publishes while its platform object is up to date: a ConfigMap of
// hosts and ids, and a Postgres connection Secret. The kind says what to publish
// (`Adapter.connection`); this writes it, renames and removes it, and decides where the Secret's
// password comes from. A pass looks at the Secret's metadata (cached) and asks the platform only
// when the Secret is missing, was written for something else, or a reset is due or under way. A
// read is one request (`connection_uri`: the address the platform names, with the password); a
// project that does not store passwords gives one only by a reset, which needs the user's consent
// (`allowPasswordReset`) or a rotation request (the `rotatePasswordAt` annotation). A reset is a
// change like any other (the layer sends it as the pass's one change, under the management
// policy); its new password is held in memory until its operations finish (the old one is valid
// until then). A reset whose answer was lost, or whose holder crashed, is resolved on the next
// pass by reading the password again, or, where none is stored, by resetting again.
import { rotatePasswordAtAnnotation } from "../../api/group.ts";
import {
  NotFoundError,
  PasswordNotStoredError,
  type Operation,
  type PlatformClient,
} from "../../platform/index.ts";
import { isControlledBy, jsonEqual, type KubeObject } from "../../runtime/index.ts";
import { secretKind, type Secret } from "../credentials.ts";
import { configMapKind, publishConfigMap, type ConfigMap } from "./connection-configmap.ts";
import {
  branchResetAnnotation,
  connectionOf,
  isCurrent,
  parseConnectionUri,
  passwordOf,
  writeConnectionSecret,
  type Connection,
  type PostgresConnection,
  type SecretTarget,
} from "./connection-secret.ts";
import { adoptSecret, checkOwnership, type Owner } from "./owned-secret.ts";
import { Delay, Problem, notFound } from "./errors.ts";
import { nextPoll } from "./polling.ts";
import type { Answer, ConnectionDetails, ConnectionSecretStatus, ManagedStatus, Pass } from "./types.ts";

type AnyPass = Pass<unknown, ManagedStatus>;

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
  recorded: ConnectionSecretStatus | undefined;
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

/** What publishing asks of the layer: a reset as the pass's change, or a look again soon. */
export type Publication =
  { reset: ResetReason; target: PostgresConnection } | { requeueAfterMs: number } | undefined;

/** A reset's new password, kept until its operations finish. Only in memory. */
interface Held {
  target: string;
  password: string;
  operations: readonly Operation[];
}

export class Connections {
  private readonly held = new Map<string, Held>();
  /** What this replica last wrote per resource (`writtenKey`). */
  private readonly written = new Map<string, string>();

  /**
   * Publishes the Secret, then the ConfigMap: it states the address the Secret was last written
   * with (the platform's connection answer), so the two never tell a client different things.
   */
  async publish(pass: AnyPass, details: ConnectionDetails, observeOnly: boolean): Promise<Publication> {
    await this.dropPrevious(pass, details.secret?.name);
    const published = details.secret
      ? await this.publishSecret(pass, details.secret, observeOnly)
      : undefined;
    if (details.configMap) {
      const owner = pass.obj as Owner;
      const { name, data } = details.configMap;
      const existing = pass.cache<ConfigMap>(configMapKind).get(owner.metadata.namespace, name);
      const address = details.secret ? pass.status.connectionSecret?.address : undefined;
      await publishConfigMap(pass.kube, owner, name, data(address), existing);
    }
    return published;
  }

  private async publishSecret(
    pass: AnyPass,
    target: PostgresConnection,
    observeOnly: boolean,
  ): Promise<Publication> {
    const owner = pass.obj as Owner;
    const uid = owner.metadata.uid ?? "";
    const secret = pass.cache<Secret>(secretKind).get(owner.metadata.namespace, target.name);
    checkOwnership(secret, owner, "spec.connectionSecret.name");
    // Left without owner by a restore: this resource's again.
    if (secret && !isControlledBy(secret, owner)) await adoptSecret(pass.kube, owner, secret);
    // The branch was reset and its Branch is bringing its roles back: the password is read once
    // the Branch is Ready again (which wakes this resource), not while the role may be missing.
    if (
      target.branchSettling &&
      secret &&
      secret.metadata.annotations?.[branchResetAnnotation] !== target.branchReset
    ) {
      return undefined;
    }

    const held = this.held.get(uid);
    if (held && held.target === targetKey(target)) return this.finishReset(pass, target, held);
    this.held.delete(uid);

    const recorded = pass.status.connectionSecret;
    const rotateAt = owner.metadata.annotations?.[rotatePasswordAtAnnotation];
    // Right after this replica's own write the cache may not show it yet: then the Secret itself
    // (one Kubernetes read, no platform request) tells whether it still is as written.
    let shown: KubeObject | undefined = secret;
    if (this.written.get(uid) === writtenKey(target) && !isCurrent(secret, target)) {
      shown = await pass.kube.get<Secret>(secretKind, owner.metadata.namespace, target.name);
    }
    const step = secretStep({
      current: isCurrent(shown, target) && recorded?.name === target.name,
      exists: shown !== undefined,
      recorded,
      rotateAt,
    });
    if (step.step === "none") return undefined;
    if (step.step === "reset") return { reset: step.why, target };
    let connection: Connection;
    try {
      connection = await this.read(pass.client, target, pass.signal);
    } catch (err) {
      if (!(err instanceof PasswordNotStoredError)) throw err;
      const why = step.orReset ?? (target.allowPasswordReset ? "NotStored" : undefined);
      if (why === undefined || observeOnly) {
        throw new Problem(
          "PasswordNotStored",
          `project ${target.projectId} does not store role passwords, so the password of role ${target.role} ` +
            (observeOnly
              ? "can only be reset, which an observe-only resource never does"
              : "can only be reset, which drops its live connections: set spec.connectionSecret.allowPasswordReset to true to allow it"),
          { retry: { after: Delay.userAction }, stalled: true },
        );
      }
      return { reset: why, target };
    }
    await this.write(pass, target, connection, rotateAt);
    return undefined;
  }

  /** The reset publish asked for, as the pass's one change. */
  async reset(
    pass: AnyPass,
    target: PostgresConnection,
    why: ResetReason,
  ): Promise<Answer<never, ManagedStatus>> {
    const recorded = pass.status.connectionSecret ?? {};
    // Intent first: a crash or a lost answer after this leaves a mark the next pass resolves.
    if (recorded.passwordReset !== why) {
      await pass.save({ connectionSecret: { ...recorded, passwordReset: why } });
    }
    const result = await pass.client.resetPassword(
      target.projectId,
      target.branchId,
      target.role,
      pass.mutation(),
    );
    const rotateAt = pass.obj.metadata.annotations?.[rotatePasswordAtAnnotation];
    this.held.set(pass.obj.metadata.uid ?? "", {
      target: targetKey(target),
      password: result.password,
      operations: result.operations,
    });
    if (why === "Rotation") {
      await pass.save({ connectionSecret: { ...pass.status.connectionSecret, passwordRotatedAt: rotateAt } });
    }
    const because =
      why === "Rotation"
        ? `${rotatePasswordAtAnnotation}=${rotateAt ?? ""}`
        : "the project does not store passwords; spec.connectionSecret.allowPasswordReset is true";
    return {
      operations: result.operations,
      message: `reset the password of role ${target.role} (${because}); Secret ${target.name} gets it when the reset finishes`,
    };
  }

  /** Forgets what is held for a resource that is gone. */
  forget(uid: string): void {
    this.held.delete(uid);
    this.written.delete(uid);
  }

  /**
   * A Secret written under another name (the spec renamed it, or no longer asks for one) is
   * deleted, so no stale copy of the password stays behind; one this resource does not control
   * is left alone.
   */
  private async dropPrevious(pass: AnyPass, wanted: string | undefined): Promise<void> {
    const previous = pass.status.connectionSecret?.name;
    if (previous === undefined || previous === wanted) return;
    const namespace = pass.obj.metadata.namespace;
    const old = pass.cache<Secret>(secretKind).get(namespace, previous);
    if (old && isControlledBy(old, pass.obj)) await pass.kube.delete(secretKind, namespace, previous);
    if (wanted === undefined) await pass.save({ connectionSecret: undefined });
    this.written.delete(pass.obj.metadata.uid ?? "");
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
      throw notFound(
        "ConnectionTargetNotFound",
        `role "${target.role}" or database "${target.database}" not found on branch ${target.branchId}: ${err.message}`,
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

  /** Once the reset's operations finish, the held password goes into the Secret. */
  private async finishReset(pass: AnyPass, target: SecretTarget, held: Held): Promise<Publication> {
    const uid = pass.obj.metadata.uid ?? "";
    if (held.operations.length > 0) {
      const outcome = await pass.client.waitForOperations(target.projectId, held.operations);
      if (outcome.state === "running") return { requeueAfterMs: nextPoll(outcome.retryAfterMs) };
      if (outcome.state === "failed") {
        this.held.delete(uid);
        throw new Problem("PasswordResetFailed", "the password reset's operations failed; trying again");
      }
    }
    this.held.delete(uid);
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
    pass: AnyPass,
    target: SecretTarget,
    connection: Connection,
    rotateAt: string | undefined,
  ): Promise<void> {
    await writeConnectionSecret(pass.kube, pass.obj as Owner, target, connection);
    this.written.set(pass.obj.metadata.uid ?? "", writtenKey(target));
    const recorded = pass.status.connectionSecret;
    // The first Secret takes the annotation as acted upon (as restartedAt on creation): a
    // manifest that carries it from the start does not reset a fresh password.
    const { host, port, pooledHost, pooledPort, sslmode } = connection;
    const next: ConnectionSecretStatus = {
      name: target.name,
      role: target.role,
      database: target.database,
      passwordRotatedAt: recorded?.name === undefined ? rotateAt : recorded.passwordRotatedAt,
      address: { host, port, pooledHost, pooledPort, sslmode },
    };
    if (!recorded || recorded.passwordReset !== undefined || !jsonEqual(recorded, next)) {
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
