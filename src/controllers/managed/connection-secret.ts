// A Postgres connection Secret a resource owns (a ComputeEndpoint's, a Project's): everything a
// pod needs to connect as one role to one database, under the names Postgres drivers and
// frameworks read (libpq's PG* variables, DATABASE_URL for node-postgres, Prisma, Django and
// Rails). Its annotations say what it was written for (never the password), so a pass can tell
// from the metadata-only cache whether it is current without reading it or asking the platform.
import { createHash } from "node:crypto";
import { group } from "../../api/group.ts";
import type { KubeClient, KubeObject } from "../../runtime/index.ts";
import { Delay, Problem } from "./errors.ts";
import { writeOwnedSecret, type Owner } from "./owned-secret.ts";

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

/** A connection Secret a kind asks the layer to keep: its target, and what the user allows. */
export interface PostgresConnection extends SecretTarget {
  /** Consent to reset the role's password when the project does not store passwords. */
  allowPasswordReset: boolean;
  /** A reset of the branch is under way or its roles are not back: an older Secret waits for it. */
  branchSettling?: boolean;
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
    throw new Problem("InvalidConnectionUri", "the platform's connection URI could not be read", {
      retry: { after: Delay.notFound },
    });
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

/** Writes the whole Secret in one apply: a reader sees the old settings or the new, never a mix. */
export async function writeConnectionSecret(
  client: KubeClient,
  owner: Owner,
  target: SecretTarget,
  connection: Connection,
): Promise<void> {
  await writeOwnedSecret(client, owner, target.name, connectionSecretData(connection), {
    [passwordOfAnnotation]: passwordOf(target),
    [connectionOfAnnotation]: connectionOf(target),
    ...(target.branchReset === undefined ? {} : { [branchResetAnnotation]: target.branchReset }),
  });
}
