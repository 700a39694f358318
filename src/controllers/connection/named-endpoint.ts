// The endpoint a branch's connection URI names. A kind that writes a connection Secret for a
// branch's read-write endpoint before it knows the endpoint (a Project adopting its project) reads
// the URI the Secret needs first: asked without an endpoint, the platform names the branch's
// read-write one, and its host names the endpoint (`endpointOfHost`), so no endpoint list is read.
// Adopting a tenant then costs its default branch list and this read, not a third request.
import {
  NotFoundError,
  PasswordNotStoredError,
  endpointOfHost,
  type PlatformClient,
} from "../../platform/index.ts";
import { parseConnectionUri } from "./secrets.ts";

/** The URI (with its password, for the Secret's first write), and the endpoint its host names. */
export interface NamedEndpoint {
  uri: string;
  /** Undefined where the host names no endpoint (a local Postgres, a proxy): a list tells which. */
  endpoint: { id: string; host: string } | undefined;
}

/**
 * The connection URI of `branchId`'s read-write endpoint for `role` and `database`, and the
 * endpoint it names. Undefined where the platform gives none: no such role, database or endpoint
 * (404), or a project that stores no password (412); the caller lists the endpoints as before,
 * and the Secret's own read says what is missing or resets the password.
 */
export async function endpointNamedByUri(
  client: PlatformClient,
  target: { projectId: string; branchId: string; role: string; database: string },
  signal: AbortSignal,
): Promise<NamedEndpoint | undefined> {
  let uri: string;
  try {
    uri = await client.connectionUri(
      target.projectId,
      { branchId: target.branchId, roleName: target.role, databaseName: target.database },
      { signal },
    );
  } catch (err) {
    if (err instanceof NotFoundError || err instanceof PasswordNotStoredError) return undefined;
    throw err;
  }
  const { host } = parseConnectionUri(uri);
  const id = endpointOfHost(host);
  return { uri, endpoint: id === undefined ? undefined : { id, host } };
}
