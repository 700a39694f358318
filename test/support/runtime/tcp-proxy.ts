// A loopback TCP proxy a test puts between a client and the API server, to cut
// connections the way a network failure would (TLS passes through untouched).
import { createServer, connect, type Socket } from "node:net";

export interface TcpProxy {
  /** The proxy's URL for an https target, e.g. https://127.0.0.1:PORT. */
  url: string;
  /** Connections the proxy has accepted so far. */
  readonly connections: number;
  /** Destroys every open connection and refuses new ones until `restore`. */
  cut(): void;
  /** Stops forwarding on open connections without closing them: a half-dead network path. New connections work. */
  freeze(): void;
  /**
   * A path cut off without a word: open connections freeze and new ones are accepted but never
   * forwarded, so every request hangs (an operator partitioned from the API server, not killed).
   */
  hang(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: URL): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  const pairs: [Socket, Socket][] = [];
  let down = false;
  let hanging = false;
  let connections = 0;
  const server = createServer((client) => {
    connections++;
    if (down) {
      client.destroy();
      return;
    }
    if (hanging) {
      sockets.add(client);
      client.on("error", () => client.destroy());
      client.pause();
      return;
    }
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    client.pipe(upstream);
    upstream.pipe(client);
    pairs.push([client, upstream]);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("proxy has no TCP address");
  const cut = (): void => {
    down = true;
    for (const s of sockets) s.destroy();
    sockets.clear();
  };
  const freeze = (): void => {
    for (const [client, upstream] of pairs.splice(0)) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  };
  return {
    url: `${target.protocol}//127.0.0.1:${address.port}`,
    get connections() {
      return connections;
    },
    cut,
    freeze,
    hang() {
      hanging = true;
      freeze();
    },
    restore() {
      down = false;
      hanging = false;
    },
    close() {
      cut();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
