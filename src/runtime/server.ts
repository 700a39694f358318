// The operator's HTTP endpoints: /metrics for Prometheus, /healthz (the
// process is alive) and /readyz (caches have synced, so reads are trustworthy).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import findMyWay from "find-my-way";
import type { Registry } from "prom-client";

export interface ServerOptions {
  /** host:port, e.g. ":8080" or "127.0.0.1:0". */
  address: string;
  registry: Registry;
  ready: () => boolean;
  healthy?: () => boolean;
}

export interface RunningServer {
  /** Base URL, e.g. http://127.0.0.1:8080. */
  url: string;
  close(): Promise<void>;
}

export function parseAddress(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(":");
  const host = colon > 0 ? address.slice(0, colon).replace(/^\[|\]$/g, "") : "0.0.0.0";
  const port = Number(colon >= 0 ? address.slice(colon + 1) : address);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`invalid listen address "${address}"`);
  return { host, port };
}

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const router = findMyWay({
    defaultRoute: (_req, res) => {
      res.statusCode = 404;
      res.end("not found\n");
    },
  });
  router.on("GET", "/metrics", (_req, res) => {
    options.registry.metrics().then(
      (text) => {
        res.setHeader("content-type", options.registry.contentType);
        res.end(text);
      },
      (err: unknown) => {
        res.statusCode = 500;
        res.end(`${String(err)}\n`);
      },
    );
  });
  router.on("GET", "/healthz", (_req, res) => {
    const ok = options.healthy?.() ?? true;
    res.statusCode = ok ? 200 : 503;
    res.end(ok ? "ok\n" : "unhealthy\n");
  });
  router.on("GET", "/readyz", (_req, res) => {
    const ok = options.ready();
    res.statusCode = ok ? 200 : 503;
    res.end(ok ? "ok\n" : "caches not synced\n");
  });
  const server: Server = createServer((req, res) => {
    router.lookup(req, res);
  });
  const { host, port } = parseAddress(options.address);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const bound = server.address() as AddressInfo;
  const shownHost = bound.family === "IPv6" ? `[${bound.address}]` : bound.address;
  return {
    url: `http://${shownHost}:${bound.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
