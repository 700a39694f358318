// `GET /projects/{id}/connection_uri`: a Postgres URI for a role and database
// of a branch, through one of its endpoints, direct or pooled.
import { findDatabase, findRole, storedPassword } from "./catalog.ts";
import { badRequest, notFound } from "./errors.ts";
import type { EndpointRecord, ProjectRecord } from "./model.ts";
import type { ConnectionUriQuery } from "./requests.ts";
import { endpointHost } from "./views.ts";
import type { World } from "./world.ts";

/** Where a client reaches an endpoint's Postgres. */
export interface PostgresAddress {
  host: string;
  port: number;
  /** The `sslmode` the URI asks for. */
  sslmode: string;
}

/** The emulator's Postgres: where it serves an endpoint, directly or through the pooler. */
export interface PostgresAddresses {
  address(endpoint: EndpointRecord, pooled: boolean): Promise<PostgresAddress>;
}

/**
 * The platform's form without a Postgres behind it: the endpoint's host, `-pooler` after its id
 * for the pooled one, port 5432 and TLS required.
 */
export function platformAddress(
  endpoint: EndpointRecord,
  project: ProjectRecord,
  pooled: boolean,
): PostgresAddress {
  const host = endpointHost(endpoint, project);
  return {
    host: pooled ? host.replace(endpoint.id, `${endpoint.id}-pooler`) : host,
    port: 5432,
    sslmode: "require",
  };
}

export async function connectionUri(
  world: World,
  project: ProjectRecord,
  query: ConnectionUriQuery,
  postgres: PostgresAddresses | undefined,
): Promise<string> {
  const branches = [...world.branches.values()].filter((b) => b.projectId === project.id);
  const branch =
    query.branch_id === undefined
      ? branches.find((b) => b.primary)
      : branches.find((b) => b.id === query.branch_id);
  if (!branch) throw notFound("branch");
  let endpoint: EndpointRecord | undefined;
  if (query.endpoint_id === undefined) {
    endpoint = world.endpointsOfBranch(branch.id).find((e) => e.type === "read_write");
    if (!endpoint) throw notFound(`read_write endpoint of branch ${branch.id}`);
  } else {
    endpoint = world.endpoints.get(query.endpoint_id);
    if (!endpoint || endpoint.projectId !== project.id) throw notFound("endpoint");
    if (endpoint.branchId !== branch.id) {
      throw badRequest(`endpoint_id: endpoint ${endpoint.id} is not on branch ${branch.id}`);
    }
  }
  const role = findRole(branch, query.role_name);
  const database = findDatabase(branch, query.database_name);
  const password = storedPassword(project, role);
  const address = await endpointAddress(endpoint, project, query.pooled === "true", postgres);
  return formatUri(role.name, password, database.name, address);
}

/** Where a client reaches the endpoint: the emulator's Postgres, or the platform's host form. */
function endpointAddress(
  endpoint: EndpointRecord,
  project: ProjectRecord,
  pooled: boolean,
  postgres: PostgresAddresses | undefined,
): Promise<PostgresAddress> {
  return postgres
    ? postgres.address(endpoint, pooled)
    : Promise.resolve(platformAddress(endpoint, project, pooled));
}

function formatUri(
  roleName: string,
  password: string,
  databaseName: string,
  address: PostgresAddress,
): string {
  const { host, port, sslmode } = address;
  const hostPort = port === 5432 ? host : `${host}:${port}`;
  return `postgresql://${encodeURIComponent(roleName)}:${encodeURIComponent(password)}@${hostPort}/${encodeURIComponent(databaseName)}?sslmode=${sslmode}`;
}

/**
 * A create answer's `ConnectionDetails`: the direct URI with the role's password (shown whether or
 * not the project stores passwords: it is the one time a client sees it), and its parts. The
 * platform's `host` and `pooler_host` are host names; the emulator's Postgres gives the same host
 * for both, so the SDK's swap of one for the other keeps the direct port, which serves the same
 * database.
 */
export async function connectionDetails(
  endpoint: EndpointRecord,
  project: ProjectRecord,
  role: { name: string; password: string },
  databaseName: string,
  postgres: PostgresAddresses | undefined,
): Promise<Record<string, unknown>> {
  const direct = await endpointAddress(endpoint, project, false, postgres);
  const pooled = await endpointAddress(endpoint, project, true, postgres);
  return {
    connection_uri: formatUri(role.name, role.password, databaseName, direct),
    connection_parameters: {
      database: databaseName,
      password: role.password,
      role: role.name,
      host: direct.host,
      pooler_host: pooled.host,
    },
  };
}
