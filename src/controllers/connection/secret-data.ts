// A Postgres connection Secret a resource owns (a ComputeEndpoint's, a Project's): everything a
// pod needs to connect as one role to one database, under the names Postgres drivers and
// frameworks read (libpq's PG* variables, DATABASE_URL for node-postgres, Prisma, Django and
// Rails). Its annotations say what it was written for (never the password), so a pass can tell
// from the metadata-only cache whether it is current without reading it or asking the platform.
// Pure: what the Secret needs (`secretNeeds`) and what to write (`secretToWrite`) are decided here,
// from facts; secrets.ts asks the platform between the two.
import { createHash } from "node:crypto";
import { group } from "../../api/group.ts";
import { jsonEqual, type KubeObject } from "../../runtime/index.ts";
import type { BranchResets } from "./branch-resets.ts";

/** Whose password the Secret holds: `project/branch/role`. */
export const passwordOfAnnotation = `${group}/password-of`;
/** A digest of what the Secret was written for besides the password (hosts, database, role). */
export const connectionOfAnnotation = `${group}/connection-of`;
/** The branch's last reset the password was read after (the Branch kind's resets); absent: none known. */
export const branchResetAnnotation = `${group}/branch-reset`;

/** Where to connect and as whom: the platform's answer, with the password. */
export interface Connection {
  host: string;
  port: number;
  pooledHost: string;
  pooledPort: number;
  user: string;
  password: string;
  database: string;
  sslmode: string;
}

/** What the Secret stands for, known without asking the platform. */
export interface SecretTarget {
  name: string;
  projectId: string;
  branchId: string;
  endpointId: string;
  host: string;
  pooledHost: string;
  role: string;
  database: string;
  /** The branch's reset marker when the Secret is written (a new one: the password may be stale). */
  branchReset?: string | undefined;
}

/** A connection Secret a kind keeps: its target, and what the user allows. */
export interface PostgresConnection extends SecretTarget {
  /** Consent to reset the role's password when the project does not store passwords. */
  allowPasswordReset: boolean;
  /** A reset of the branch is under way or its roles are not back: an older Secret waits for it. */
  branchSettling?: boolean;
  /** The spec field naming the Secret, for messages. */
  field: string;
}

/** The target's branch reset marker and whether it settles, from what the branch's Branch lends. */
export function branchResetOf(
  resets: BranchResets | undefined,
): Pick<PostgresConnection, "branchReset" | "branchSettling"> {
  return { branchReset: resets?.marker, branchSettling: resets?.settling ?? false };
}

/** The keys of the Secret, in one place (docs/connection-secrets.md lists them). */
export function connectionSecretData(c: Connection): Record<string, string> {
  return {
    DATABASE_URL: connectionUrl(c, c.host, c.port),
    DATABASE_URL_POOLED: connectionUrl(c, c.pooledHost, c.pooledPort),
    PGHOST: c.host,
    PGPORT: String(c.port),
    PGUSER: c.user,
    PGPASSWORD: c.password,
    PGDATABASE: c.database,
    PGSSLMODE: c.sslmode,
  };
}

function connectionUrl(c: Connection, host: string, port: number): string {
  const user = encodeURIComponent(c.user);
  const password = encodeURIComponent(c.password);
  const database = encodeURIComponent(c.database);
  return `postgresql://${user}:${password}@${host}:${port}/${database}?sslmode=${encodeURIComponent(c.sslmode)}`;
}

export function passwordOf(target: SecretTarget): string {
  return `${target.projectId}/${target.branchId}/${target.role}`;
}

/** Changes when anything the Secret was written from changes (its key format included). */
export function connectionOf(target: SecretTarget): string {
  const parts = [
    "v1",
    target.projectId,
    target.branchId,
    target.endpointId,
    target.host,
    target.pooledHost,
    target.role,
    target.database,
  ];
  return createHash("sha256").update(parts.join("\n")).digest("hex").slice(0, 16);
}

/** The Secret is what `target` asks for (read from its metadata: the cache holds no data). */
export function isCurrent(secret: KubeObject | undefined, target: SecretTarget): boolean {
  const annotations = secret?.metadata.annotations ?? {};
  return (
    annotations[passwordOfAnnotation] === passwordOf(target) &&
    annotations[connectionOfAnnotation] === connectionOf(target) &&
    annotations[branchResetAnnotation] === target.branchReset
  );
}

/** What the Secret's annotations say it was written for (the layer writes it whole, publishing.ts). */
export function connectionSecretAnnotations(target: SecretTarget): Record<string, string> {
  return {
    [passwordOfAnnotation]: passwordOf(target),
    [connectionOfAnnotation]: connectionOf(target),
    ...(target.branchReset === undefined ? {} : { [branchResetAnnotation]: target.branchReset }),
  };
}

/** Where the Secret says to connect (never the password): what the ConfigMap states too. */
export interface ConnectionAddress {
  host: string;
  port: number;
  pooledHost: string;
  pooledPort: number;
  sslmode: string;
}

/** What status records of the connection Secret (never its password). */
export interface ConnectionSecretStatus {
  name?: string | undefined;
  role?: string | undefined;
  database?: string | undefined;
  /** The rotatePasswordAt annotation value last acted upon. */
  passwordRotatedAt?: string | undefined;
  /** Why a reset was sent whose new password is not in the Secret yet. */
  passwordReset?: string | undefined;
  address?: ConnectionAddress | undefined;
}

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
 * The one decision: a rotation asked for once the Secret exists resets; a reset whose new password
 * was lost is read again (or, where none is stored, reset again: the user asked for it); a Secret
 * that is current needs nothing; anything else reads.
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

/** What the Secret `shown` (its metadata) needs for `target`, as status recorded it. */
export function secretNeeds(
  shown: KubeObject | undefined,
  target: SecretTarget,
  recorded: ConnectionSecretStatus | undefined,
  rotateAt: string | undefined,
): SecretStep {
  return secretStep({
    current: isCurrent(shown, target) && recorded?.name === target.name,
    exists: shown !== undefined,
    recorded,
    rotateAt,
  });
}

/**
 * A branch reset made the Secret stale while the branch's Branch is bringing its roles back: the
 * password is read once the Branch is Ready again, not while the role may be missing.
 */
export function waitsForBranch(secret: KubeObject | undefined, target: PostgresConnection): boolean {
  return (
    target.branchSettling === true &&
    secret !== undefined &&
    secret.metadata.annotations?.[branchResetAnnotation] !== target.branchReset
  );
}

/** What to write for `connection`, and what status then records of it (undefined: as recorded). */
export function secretToWrite(
  target: PostgresConnection,
  connection: Connection,
  recorded: ConnectionSecretStatus | undefined,
  rotateAt: string | undefined,
) {
  const { host, port, pooledHost, pooledPort, sslmode } = connection;
  const address = { host, port, pooledHost, pooledPort, sslmode };
  // The first Secret takes the annotation as acted upon (as restartedAt on creation): a manifest
  // that carries it from the start does not reset a fresh password.
  const next: ConnectionSecretStatus = {
    name: target.name,
    role: target.role,
    database: target.database,
    passwordRotatedAt: recorded?.name === undefined ? rotateAt : recorded.passwordRotatedAt,
    address,
  };
  const changed = !recorded || recorded.passwordReset !== undefined || !jsonEqual(recorded, next);
  return {
    secret: {
      name: target.name,
      field: target.field,
      data: connectionSecretData(connection),
      annotations: connectionSecretAnnotations(target),
      note: `wrote Secret ${target.name} for role ${target.role}`,
    },
    status: changed ? { connectionSecret: next } : undefined,
    address,
  };
}

/** What this replica wrote for a target (its password, its connection, the branch's reset). */
export function writtenKey(t: SecretTarget): string {
  return `${passwordOf(t)}|${connectionOf(t)}|${t.branchReset ?? ""}`;
}
