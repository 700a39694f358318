// The emulator's Postgres proxy: each endpoint gets a direct and a pooled
// port (opened when a connection URI first names them). A client's password
// is checked against the role's current one, as the platform's proxy does
// (cleartext, over loopback); then the endpoint wakes like on the platform and
// the connection is handed to the branch's database.
import { timingSafeEqual } from "node:crypto";
import { BlockList, connect, createServer, isIP, isIPv4, type Server, type Socket } from "node:net";
import { currentPassword, databasesOf, rolesOf } from "../catalog.ts";
import type { Clock } from "../clock.ts";
import type { PostgresAddress, PostgresAddresses } from "../connection-uri.ts";
import { connectToEndpoint } from "../endpoints.ts";
import { PlatformError } from "../errors.ts";
import type { EndpointRecord } from "../model.ts";
import type { World } from "../world.ts";
import type { DatabaseLease, DatabaseStore } from "./store.ts";
import { cleartextPasswordRequest, fatalError, passwordOf, readFirstPacket, readMessage } from "./wire.ts";

export interface FrontOptions {
  /** The address the ports listen on (default 127.0.0.1). */
  listenHost: string;
  /** The host connection URIs name (default: the listen host). */
  advertisedHost: string;
  store: DatabaseStore;
  /** The current world (a reset replaces it). */
  world(): World;
  clock: Clock;
  /** The world changed (an endpoint woke): the state file should be written. */
  changed(): void;
}

/** A connection refused before it reaches a database, with its SQLSTATE. */
class Refusal extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

const handshakeTimeoutMs = 30_000;

export class PostgresFront implements PostgresAddresses {
  private readonly options: FrontOptions;
  private readonly ports = new Map<string, Promise<number>>();
  /** The listening servers, by endpoint. */
  private readonly servers = new Map<string, Set<Server>>();
  private readonly sockets = new Set<Socket>();
  /** Client connections handed to a database, by endpoint. */
  private readonly sessions = new Map<string, Set<Socket>>();

  constructor(options: FrontOptions) {
    this.options = options;
  }

  async address(endpoint: EndpointRecord, pooled: boolean): Promise<PostgresAddress> {
    const key = `${endpoint.id}${pooled ? "-pooler" : ""}`;
    let port = this.ports.get(key);
    if (!port) {
      port = this.listen(endpoint.id);
      this.ports.set(key, port);
      port.catch(() => this.ports.delete(key));
    }
    return { host: this.options.advertisedHost, port: await port, sslmode: "disable" };
  }

  /** Drops the endpoint's connections, as the platform does when it applies a configuration change. */
  dropSessions(endpointId: string): void {
    for (const socket of this.sessions.get(endpointId) ?? []) socket.destroy();
    this.sessions.delete(endpointId);
  }

  /** The ports URIs have named, by endpoint id (with `-pooler` for the pooled one), to open again after a restart. */
  async openPorts(): Promise<Record<string, number>> {
    const entries = await Promise.all(
      [...this.ports].map(async ([key, port]) => [key, await port.catch(() => undefined)] as const),
    );
    return Object.fromEntries(entries.filter((e): e is readonly [string, number] => e[1] !== undefined));
  }

  /** Opens the ports a previous run's URIs named, where they are free, so those URIs still work. */
  async reopen(ports: Record<string, number>): Promise<void> {
    const world = this.options.world();
    await Promise.all(
      Object.entries(ports).map(async ([key, port]) => {
        const endpointId = key.replace(/-pooler$/, "");
        if (!world.endpoints.has(endpointId)) return;
        const listening = this.listen(endpointId, port);
        this.ports.set(key, listening);
        await listening.catch(() => this.ports.delete(key)); // taken meanwhile: a new port on demand
      }),
    );
  }

  /** Closes a deleted endpoint's ports and drops its connections. */
  closeEndpoint(endpointId: string): void {
    this.dropSessions(endpointId);
    this.ports.delete(endpointId);
    this.ports.delete(`${endpointId}-pooler`);
    const servers = this.servers.get(endpointId) ?? [];
    this.servers.delete(endpointId);
    for (const server of servers) server.close();
  }

  /** Closes every port and drops every connection (the emulator's reset or close). */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    const servers = [...this.servers.values()].flatMap((set) => [...set]);
    this.servers.clear();
    this.ports.clear();
    this.sessions.clear();
    await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  }

  private async listen(endpointId: string, port = 0): Promise<number> {
    const server = createServer((socket) => this.accept(socket, endpointId));
    let servers = this.servers.get(endpointId);
    if (!servers) {
      servers = new Set();
      this.servers.set(endpointId, servers);
    }
    servers.add(server);
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, this.options.listenHost, () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("postgres front: no port");
    return address.port;
  }

  /** The handshake: TLS refused (`N`), the startup message, the password; then the database. */
  private accept(socket: Socket, endpointId: string): void {
    this.sockets.add(socket);
    socket.on("close", () => this.sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    socket.setTimeout(handshakeTimeoutMs, () => socket.destroy());
    let buffer = Buffer.alloc(0);
    let startup: { packet: Buffer; params: Map<string, string> } | undefined;
    const refuse = (code: string, message: string): void => {
      socket.end(fatalError(code, message));
    };
    const onData = (chunk: Buffer): void => {
      buffer = Buffer.concat([buffer, chunk]);
      while (!startup) {
        const first = readFirstPacket(buffer);
        if (!first) return;
        buffer = buffer.subarray(first.length);
        const { packet } = first;
        if (packet.kind === "encryption-request") socket.write("N");
        else if (packet.kind === "cancel") return void socket.destroy();
        else if (packet.kind === "unsupported") return refuse("08P01", packet.reason);
        else {
          startup = packet;
          socket.write(cleartextPasswordRequest());
        }
      }
      const message = readMessage(buffer);
      if (!message) return;
      buffer = buffer.subarray(message.length);
      socket.off("data", onData);
      socket.pause();
      if (message.type !== "p") return refuse("08P01", "expected a password message");
      const client = clientAddress(socket);
      this.open(socket, endpointId, startup, passwordOf(message.body), buffer, client).catch(
        (err: unknown) => {
          if (err instanceof Refusal) refuse(err.code, err.message);
          else {
            console.error("emulator: postgres connection failed:", err);
            refuse("XX000", "internal error");
          }
        },
      );
    };
    socket.on("data", onData);
  }

  private async open(
    socket: Socket,
    endpointId: string,
    startup: { packet: Buffer; params: Map<string, string> },
    password: string,
    pending: Buffer,
    client: string,
  ): Promise<void> {
    const lease = await this.authenticate(endpointId, startup.params, password, client);
    if (socket.destroyed) {
      lease.release(); // the client left while its database started
      return;
    }
    const backend = connect(lease.port, "127.0.0.1");
    const done = (): void => {
      lease.release();
      socket.destroy();
      backend.destroy();
    };
    backend.on("error", done);
    backend.on("close", done);
    socket.on("close", done);
    let sessions = this.sessions.get(endpointId);
    if (!sessions) {
      sessions = new Set();
      this.sessions.set(endpointId, sessions);
    }
    sessions.add(socket);
    socket.on("close", () => this.sessions.get(endpointId)?.delete(socket));
    await new Promise<void>((resolve) => backend.once("connect", () => resolve()));
    socket.setTimeout(0);
    // The database answers the startup message itself: AuthenticationOk, parameters, ReadyForQuery.
    backend.write(startup.packet);
    if (pending.length > 0) backend.write(pending);
    socket.on("data", () => lease.traffic());
    socket.pipe(backend);
    backend.pipe(socket);
  }

  /** Checks the role's current password and the database, wakes the endpoint, and leases the database. */
  private async authenticate(
    endpointId: string,
    params: Map<string, string>,
    password: string,
    client: string,
  ): Promise<DatabaseLease> {
    const world = this.options.world();
    const now = this.options.clock.now();
    world.advance(now);
    const user = params.get("user") ?? "";
    const databaseName = params.get("database") || user;
    const endpoint = world.endpoints.get(endpointId);
    const branch = endpoint === undefined ? undefined : world.branches.get(endpoint.branchId);
    if (!endpoint || !branch) throw new Refusal("08004", `endpoint ${endpointId} not found`);
    // The project's IP allow-list, before the password is looked at, as the platform's proxy does.
    const allowed = world.projects.get(branch.projectId)?.settings?.allowed_ips;
    if (!ipAllowed(client, allowed, branch.protected === true)) {
      // The proxy's words, sent as an ErrorResponse without a code of its own: SQLSTATE XX000.
      throw new Refusal(
        "XX000",
        `This IP address ${client} is not allowed to connect to this endpoint. ` +
          "Please add it to the allowed list in the Neon console. Make sure to check for IPv4 or IPv6 addresses.",
      );
    }
    const role = rolesOf(branch).find((r) => r.name === user);
    const expected = role === undefined ? undefined : currentPassword(world, role);
    if (expected === undefined || !samePassword(expected, password)) {
      throw new Refusal("28P01", `password authentication failed for user "${user}"`);
    }
    // The docs: an anonymized branch is unavailable while its data is being masked.
    if (branch.anonymization?.state === "anonymizing") {
      throw new Refusal("57P03", `branch ${branch.id} is being anonymized; connect once the run ends`);
    }
    const database = databasesOf(branch).find((d) => d.name === databaseName);
    if (!database) throw new Refusal("3D000", `database "${databaseName}" does not exist`);
    try {
      connectToEndpoint(world, endpoint.id, now);
    } catch (err) {
      if (err instanceof PlatformError) throw new Refusal("08004", err.message);
      throw err;
    }
    this.options.changed();
    return this.options.store.lease(branch.id, database);
  }
}

function samePassword(expected: string, given: string): boolean {
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The client's IP address, an IPv4 one as itself rather than IPv4-mapped IPv6. */
function clientAddress(socket: Socket): string {
  const address = socket.remoteAddress ?? "";
  return address.startsWith("::ffff:") && isIPv4(address.slice(7)) ? address.slice(7) : address;
}

/**
 * Whether the project's allow-list lets `address` in: no list (or an empty one) allows everyone;
 * with `protected_branches_only` it applies to protected branches alone. Entries are addresses,
 * CIDR blocks and ranges `a-b` (the API refused anything else).
 */
export function ipAllowed(
  address: string,
  allowed: { ips?: string[]; protected_branches_only?: boolean } | undefined,
  protectedBranch: boolean,
): boolean {
  const ips = allowed?.ips ?? [];
  if (ips.length === 0) return true;
  if (allowed?.protected_branches_only === true && !protectedBranch) return true;
  const family = isIP(address);
  if (family === 0) return false;
  const list = new BlockList();
  for (const entry of ips) {
    const [base = "", prefix] = entry.split("/");
    const range = entry.split("-");
    const type = (ip: string) => (isIPv4(ip) ? "ipv4" : "ipv6");
    if (prefix !== undefined) list.addSubnet(base, Number(prefix), type(base));
    else if (range.length === 2 && range[0] && range[1]) list.addRange(range[0], range[1], type(range[0]));
    else list.addAddress(entry, type(entry));
  }
  return list.check(address, family === 4 ? "ipv4" : "ipv6");
}
