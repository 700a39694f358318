// A Postgres connection Secret as a kind's verbs keep it: `observe` says what the Secret needs
// (nothing, a fresh read of the password, or a reset as the resource's change) and gives the data
// to write; `reset` is that change. The layer only writes what it is given (publishing.ts).
//
// A pass looks at the Secret's metadata (cached) and asks the platform only when the Secret is
// missing, was written for something else, or a reset is due or under way. A read is one request
// (`connection_uri`: the address the platform names, with the password); a project that does not
// store passwords gives one only by a reset, which needs the user's consent (`allowPasswordReset`)
// or a rotation request (the `rotatePasswordAt` annotation). A reset's new password is held in
// memory until its operations finish (the old one is valid until then). A reset whose answer was
// lost, or whose holder crashed, is resolved on the next pass by reading the password again, or,
// where none is stored, by resetting again.
import { rotatePasswordAtAnnotation } from "../../api/group.ts";
import {
  NotFoundError,
  PasswordNotStoredError,
  type Operation,
  type PlatformClient,
} from "../../platform/index.ts";
import type { KubeObject } from "../../runtime/index.ts";
import { secretKind, type Secret } from "../managed/credentials.ts";
import type { Answer, ConnectionDetails, Pass } from "../managed/kind.ts";
import { nextPoll } from "../managed/polling.ts";
import { Refusal, outside } from "../managed/refusal.ts";
import { mutation } from "../operations/project.ts";
import {
  isCurrent,
  secretNeeds,
  secretToWrite,
  waitsForBranch,
  writtenKey,
  type Connection,
  type ConnectionAddress,
  type ConnectionSecretStatus,
  type PostgresConnection,
  type ResetReason,
  type SecretTarget,
} from "./secret-data.ts";

export type { ConnectionAddress, ConnectionSecretStatus, ResetReason } from "./secret-data.ts";

interface ConnectionStatus {
  connectionSecret?: ConnectionSecretStatus | undefined;
}

type ConnectionPass = Pass<unknown, ConnectionStatus, PlatformClient>;

/** What the Secret needs now. */
export type SecretView =
  | {
      /** For the publishing option: its name, and its data when it must be written. */
      secret: NonNullable<ConnectionDetails["secret"]>;
      /** The status record once written (undefined: unchanged). */
      status?: ConnectionStatus | undefined;
      /** The address the Secret says (for the ConfigMap); undefined: none known yet. */
      address?: ConnectionAddress | undefined;
      /** A reset's new password is not due yet: look again then. */
      lookAgainMs?: number | undefined;
    }
  | { reset: ResetReason };

/** How many resources' last writes are remembered (the oldest go first). */
const writtenKept = 10_000;

/** A reset's new password, kept until its operations finish. Only in memory. */
interface Held {
  target: string;
  password: string;
  operations: readonly Operation[];
}

/** The step a reset is, as a kind's observation names it. */
export const resetStep = {
  action: "ResetPassword",
  reason: "ResettingPassword",
  event: "PasswordReset",
  message: "resetting the connection Secret's password",
} as const;

export class ConnectionSecrets {
  private readonly held = new Map<string, Held>();
  /** What this replica last gave to write per resource (`writtenKey`). */
  private readonly written = new Map<string, string>();

  /**
   * What the Secret of `target` needs; `observeOnly`: a resource that never resets a password;
   * `uri`: the target's connection URI this pass has read already (named-endpoint.ts), taken
   * rather than read again.
   */
  async observe(
    pass: ConnectionPass,
    target: PostgresConnection,
    observeOnly: boolean,
    uri?: string,
  ): Promise<SecretView> {
    const owner = pass.obj;
    const uid = owner.metadata.uid ?? "";
    const named = { name: target.name, field: target.field };
    const recorded = pass.status.connectionSecret;
    const unchanged = {
      secret: named,
      address: recorded?.name === target.name ? recorded.address : undefined,
    };
    const secret = pass.cache<Secret>(secretKind).get(owner.metadata.namespace, target.name);
    // The Branch wakes this resource once its roles are back.
    if (waitsForBranch(secret, target)) return unchanged;

    const held = this.held.get(uid);
    if (held && held.target === targetKey(target)) return this.finishReset(pass, target, held);
    this.held.delete(uid);

    const rotateAt = owner.metadata.annotations?.[rotatePasswordAtAnnotation];
    // Right after this replica's own write the cache may not show it yet: then the Secret itself
    // (one Kubernetes read, no platform request) tells whether it still is as written.
    let shown: KubeObject | undefined = secret;
    if (this.written.get(uid) === writtenKey(target)) {
      // Once the cache shows the write there is nothing left to aid (a resource at rest keeps no entry).
      if (isCurrent(secret, target)) this.written.delete(uid);
      else shown = await pass.kube.get<Secret>(secretKind, owner.metadata.namespace, target.name);
    }
    const step = secretNeeds(shown, target, recorded, rotateAt);
    if (step.step === "none") return unchanged;
    if (step.step === "reset") return this.resetOrRefuse(step.why, target, observeOnly);
    let connection: Connection;
    try {
      connection = await read(pass.client, target, pass.signal, uri);
    } catch (err) {
      if (!(err instanceof PasswordNotStoredError)) throw err;
      const why = step.orReset ?? (target.allowPasswordReset ? "NotStored" : undefined);
      if (why === undefined || observeOnly) {
        throw outside(
          "PasswordNotStored",
          `project ${target.projectId} does not store role passwords, so the password of role ${target.role} ` +
            (observeOnly
              ? "can only be reset, which an observe-only resource never does"
              : `can only be reset, which drops its live connections: set ${target.field.replace(/\.name$/, "")}.allowPasswordReset to true to allow it`),
        );
      }
      return this.resetOrRefuse(why, target, observeOnly);
    }
    return this.toWrite(pass, target, connection, rotateAt);
  }

  /** The reset `observe` asked for, as the resource's change. */
  async reset(
    pass: ConnectionPass,
    target: PostgresConnection,
    why: ResetReason,
  ): Promise<Answer<ConnectionStatus>> {
    const recorded = pass.status.connectionSecret ?? {};
    // Intent first: a crash or a lost answer after this leaves a mark the next pass resolves.
    if (recorded.passwordReset !== why) {
      await pass.save({ connectionSecret: { ...recorded, passwordReset: why } });
    }
    const result = await pass.client.resetPassword(
      target.projectId,
      target.branchId,
      target.role,
      mutation(pass),
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
        : `the project does not store passwords; ${target.field.replace(/\.name$/, "")}.allowPasswordReset is true`;
    return {
      operations: result.operations,
      message: `reset the password of role ${target.role} (${because}); Secret ${target.name} gets it when the reset finishes`,
    };
  }

  /** Forgets what is held for a resource that goes (its deletion's pass). */
  forget(uid: string): void {
    this.held.delete(uid);
    this.written.delete(uid);
  }

  private resetOrRefuse(why: ResetReason, target: PostgresConnection, observeOnly: boolean): SecretView {
    if (observeOnly) {
      throw new Refusal(
        "ObserveOnly",
        "spec",
        `a password reset of role ${target.role} was asked for (${why}), and an observe-only resource changes nothing on the platform`,
      );
    }
    return { reset: why };
  }

  /** Once the reset's operations finish, the held password goes into the Secret. */
  private async finishReset(
    pass: ConnectionPass,
    target: PostgresConnection,
    held: Held,
  ): Promise<SecretView> {
    const uid = pass.obj.metadata.uid ?? "";
    const recorded = pass.status.connectionSecret;
    if (held.operations.length > 0) {
      const outcome = await pass.client.waitForOperations(target.projectId, held.operations);
      if (outcome.state === "running") {
        const address = recorded?.name === target.name ? recorded.address : undefined;
        return {
          secret: { name: target.name, field: target.field },
          address,
          lookAgainMs: nextPoll(outcome.retryAfterMs),
        };
      }
      if (outcome.state === "failed") {
        this.held.delete(uid);
        throw new Refusal(
          "PasswordResetFailed",
          "transient",
          "the password reset's operations failed; trying again",
        );
      }
    }
    this.held.delete(uid);
    // The address as the platform names it needs no password: only a project that stores none
    // answers without one (then the endpoint's own hosts, on the standard port).
    let connection: Connection;
    try {
      connection = { ...(await read(pass.client, target, pass.signal)), password: held.password };
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
    return this.toWrite(
      pass,
      target,
      connection,
      pass.obj.metadata.annotations?.[rotatePasswordAtAnnotation],
    );
  }

  /** The Secret to write for `connection` (noted as this replica's own write), and its status. */
  private toWrite(
    pass: ConnectionPass,
    target: PostgresConnection,
    connection: Connection,
    rotateAt: string | undefined,
  ): SecretView {
    const uid = pass.obj.metadata.uid ?? "";
    this.written.delete(uid);
    this.written.set(uid, writtenKey(target));
    // Only an aid for a cache that lags this replica's own writes: the oldest entries may go.
    if (this.written.size > writtenKept) this.written.delete(this.written.keys().next().value ?? "");
    return secretToWrite(target, connection, pass.status.connectionSecret, rotateAt);
  }
}

/**
 * The password and address as the platform names them: one `connection_uri` request (none when
 * the pass read it already: `known`); a second for the pooled address only when the platform names
 * a host other than the endpoint's (then the pooler's `-pooler` host cannot be derived).
 */
async function read(
  client: PlatformClient,
  target: SecretTarget,
  signal: AbortSignal,
  known?: string,
): Promise<Connection> {
  const query = {
    branchId: target.branchId,
    endpointId: target.endpointId,
    databaseName: target.database,
    roleName: target.role,
  };
  const uri =
    known ??
    (await client.connectionUri(target.projectId, query, { signal }).catch((err: unknown) => {
      if (!(err instanceof NotFoundError)) throw err;
      throw outside(
        "ConnectionTargetNotFound",
        `role "${target.role}" or database "${target.database}" not found on branch ${target.branchId}: ${err.message}`,
      );
    }));
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

function targetKey(t: SecretTarget): string {
  return `${t.name}/${t.projectId}/${t.branchId}/${t.role}`;
}

/**
 * Reads a connection URI the platform built (`postgresql://user:password@host[:port]/db?sslmode=`).
 * The pooled host is filled in by the caller. Undefined password: the URI carries none.
 */
export function parseConnectionUri(uri: string): Omit<Connection, "pooledHost" | "pooledPort"> {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    // Never quote the URI: it carries the password.
    throw new Refusal("InvalidConnectionUri", "transient", "the platform's connection URI could not be read");
  }
  return {
    host: url.hostname,
    port: url.port ? Number(url.port) : 5432,
    user: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
    database: decodeURIComponent(url.pathname.replace(/^\//, "")),
    sslmode: url.searchParams.get("sslmode") ?? "require",
  };
}
