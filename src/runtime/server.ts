// The operator's HTTP endpoints: /metrics for Prometheus, /healthz (the
// process is alive) and /readyz (caches have synced, so reads are trustworthy).
// With secure metrics, /metrics moves to a server of its own over HTTPS where
// each scrape must carry a bearer token the API server accepts and allows to
// `get /metrics` (metrics-auth.ts); the probes stay plain HTTP for the kubelet.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import findMyWay from "find-my-way";
import type { Registry } from "prom-client";
import type { Verdict } from "./metrics-auth.ts";

export interface ServerOptions {
  /** host:port, e.g. ":8080" or "127.0.0.1:0". */
  address: string;
  registry: Registry;
  ready: () => boolean;
  healthy?: () => boolean;
  /** Serve /metrics here too (default); false when `startSecureMetricsServer` serves it. */
  metrics?: boolean;
}

export interface SecureMetricsOptions {
  /** host:port, e.g. ":8443". */
  address: string;
  registry: Registry;
  /** PEM certificate and key, read again by `tls()` when they may have been renewed. */
  tls: () => { cert: string; key: string };
  /** How often `tls()` is asked again (a mounted certificate renewed by cert-manager). */
  tlsReloadMs?: number;
  authorizer: { check(authorization: string | undefined, method: string, path: string): Promise<Verdict> };
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
  if (options.metrics !== false)
    router.on("GET", "/metrics", (_req, res) => writeMetrics(options.registry, res));
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
  return listen(server, options.address, "http");
}

/** /metrics over HTTPS, each scrape authenticated and authorized by the API server. */
export async function startSecureMetricsServer(options: SecureMetricsOptions): Promise<RunningServer> {
  let material = options.tls();
  const server = createHttpsServer(material, (req, res) => {
    const path = new URL(req.url ?? "/", "https://metrics").pathname;
    if (path !== "/metrics" || req.method !== "GET") {
      res.statusCode = 404;
      res.end("not found\n");
      return;
    }
    options.authorizer.check(req.headers.authorization, "GET", path).then(
      (verdict) => {
        if (verdict.status === 200) return writeMetrics(options.registry, res);
        res.statusCode = verdict.status;
        if (verdict.status === 401) res.setHeader("www-authenticate", "Bearer");
        res.end(`${verdict.status === 401 ? "Unauthorized" : "Forbidden"}: ${verdict.reason}\n`);
      },
      (err: unknown) => {
        // The API server could not review the token: not the scraper's fault, and not a yes.
        res.statusCode = 500;
        res.end(`could not review the scrape's token: ${err instanceof Error ? err.message : String(err)}\n`);
      },
    );
  });
  const reload = setInterval(() => {
    try {
      const next = options.tls();
      if (next.cert !== material.cert || next.key !== material.key) {
        server.setSecureContext(next);
        material = next;
      }
    } catch {
      // A renewal half-written: the current certificate serves until the next look.
    }
  }, options.tlsReloadMs ?? 60_000);
  reload.unref();
  server.once("close", () => clearInterval(reload));
  return listen(server, options.address, "https");
}

function writeMetrics(registry: Registry, res: ServerResponse<IncomingMessage>): void {
  registry.metrics().then(
    (text) => {
      res.setHeader("content-type", registry.contentType);
      res.end(text);
    },
    (err: unknown) => {
      res.statusCode = 500;
      res.end(`${String(err)}\n`);
    },
  );
}

async function listen(server: Server, address: string, scheme: "http" | "https"): Promise<RunningServer> {
  const { host, port } = parseAddress(address);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const bound = server.address() as AddressInfo;
  const shownHost = bound.family === "IPv6" ? `[${bound.address}]` : bound.address;
  return {
    url: `${scheme}://${shownHost}:${bound.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
