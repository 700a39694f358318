// A plain-HTTP proxy on loopback in front of the real (HTTPS) API server, so a
// test can stop the operator at an exact step from outside: hold a request
// (say, the Secret write that stores a new key) until the test has killed the
// operator, fail it with a status, or drop its connection. The operator's own
// bearer token passes through, so it acts with its own identity; the proxy
// only trusts the server's CA. Its log keeps method, path and outcome, never a
// header or a body (a Secret write carries a key value). A tap keeps, in memory
// only, what the server answered to the requests it matches, so a test can ask
// whether a value crossed the wire without ever printing the answers.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { Agent, request as httpsRequest, type RequestOptions } from "node:https";
import type { AddressInfo } from "node:net";
import { createGunzip } from "node:zlib";
import type { KubeConfig } from "@kubernetes/client-node";

export interface RequestMatch {
  /** HTTP method; any when absent. */
  method?: string;
  /** Tested against the path without its query, e.g. /\/secrets\/svc-api-key$/. */
  path: RegExp;
  /** Tested against the request body (a status patch's fields, for instance). */
  body?: RegExp;
}

export type ProxyRule = RequestMatch &
  ({ action: "hold" } | { action: "fail"; status: number } | { action: "drop" }) & {
    /** How many requests the rule applies to; all when absent. */
    times?: number;
  };

export type ProxyOutcome = "forwarded" | "held" | "released" | "discarded" | "failed" | "dropped";

export interface ProxyLogEntry {
  method: string;
  path: string;
  outcome: ProxyOutcome;
  /** The upstream status of a forwarded or released request, or the status a rule answered with. */
  status?: number;
  /** A GET with `watch=true` (a watch, not a list), for telling RBAC verbs apart. */
  watch?: boolean;
}

export interface HeldRequest {
  method: string;
  path: string;
  /** Sends the request on to the API server after all. */
  release(): void;
}

export interface ArmedRule {
  /** Resolves with the first request the rule holds, fails or drops. */
  readonly hit: Promise<HeldRequest>;
  /** `hit`, or an error naming `what` when no request matched within `timeoutMs`. */
  waitForHit(what: string, timeoutMs?: number): Promise<HeldRequest>;
  /** Requests this rule holds now (released or discarded ones leave). */
  readonly held: readonly HeldRequest[];
  remove(): void;
}

/** A request a tap matched. */
export interface TappedRequest {
  method: string;
  path: string;
  watch: boolean;
  /** The Accept header it sent (what representation it asked for). */
  accept: string | undefined;
}

export interface Tap {
  /** The matched requests that reached the server, oldest first. */
  readonly requests: readonly TappedRequest[];
  /** Bytes of the answers so far, decompressed: what the client was sent. */
  readonly bytes: number;
  /** Whether any answer so far held `needle` (decompressed, as the client read it). */
  carried(needle: string): boolean;
  remove(): void;
}

export interface ApiProxy {
  /** The proxy's URL, for a kubeconfig's `server`. */
  url: string;
  /** What passed through, oldest first. */
  readonly log: readonly ProxyLogEntry[];
  arm(rule: ProxyRule): ArmedRule;
  /** Starts keeping the answers to requests matching `match` (method, path; bodies are not matched). */
  tap(match: Omit<RequestMatch, "body">): Tap;
  /**
   * Removes every rule; a request still held is dropped, never forwarded (its
   * client may be a killed operator whose socket has not closed yet).
   */
  reset(): void;
  close(): Promise<void>;
}

interface Armed {
  rule: ProxyRule;
  left: number;
  held: Set<HeldRequest & { drop(): void }>;
  hit: (request: HeldRequest) => void;
}

/** Starts the proxy for the API server of `target` (the admin kubeconfig: its server URL and CA). */
export async function startApiProxy(target: KubeConfig, options: { port?: number } = {}): Promise<ApiProxy> {
  const cluster = target.getCurrentCluster();
  if (!cluster) throw new Error("the kubeconfig has no current cluster");
  const upstream = new URL(cluster.server);
  const tls: RequestOptions = {};
  await target.applyToHTTPSOptions(tls);
  // Only the CA: the client's own credentials go through in its request.
  const agent = new Agent({ keepAlive: true, ca: tls.ca });
  const log: ProxyLogEntry[] = [];
  const rules: Armed[] = [];
  const taps: { match: Omit<RequestMatch, "body">; requests: TappedRequest[]; chunks: Buffer[] }[] = [];
  const open = new Set<ServerResponse>();

  const forward = (
    req: IncomingMessage,
    res: ServerResponse,
    body: Buffer,
    path: string,
    as: ProxyOutcome,
  ) => {
    const headers = { ...req.headers, host: upstream.host };
    const out = httpsRequest(
      {
        protocol: upstream.protocol,
        hostname: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers,
        agent,
      },
      (answer) => {
        const watch = new URL(req.url ?? "/", "http://proxy").searchParams.get("watch");
        const isWatch = watch === "true" || watch === "1";
        log.push({
          method: req.method ?? "",
          path,
          outcome: as,
          status: answer.statusCode ?? 0,
          ...(isWatch ? { watch: true } : {}),
        });
        const method = req.method ?? "";
        const tapping = taps.filter(
          (t) => (t.match.method === undefined || t.match.method === method) && t.match.path.test(path),
        );
        if (tapping.length > 0) {
          const accept = req.headers.accept;
          for (const t of tapping) t.requests.push({ method, path, watch: isWatch, accept });
          const gzipped = answer.headers["content-encoding"] === "gzip";
          const plain = gzipped ? answer.pipe(createGunzip()) : answer;
          plain.on("data", (chunk: Buffer) => {
            for (const t of tapping) t.chunks.push(chunk);
          });
          plain.on("error", () => undefined);
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on("error", () => res.destroy());
    res.once("close", () => out.destroy()); // a watch the client gave up on
    out.end(body);
  };

  const server = createServer((req, res) => {
    open.add(res);
    res.once("close", () => open.delete(res));
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const method = req.method ?? "";
      const path = new URL(req.url ?? "/", "http://proxy").pathname;
      const armed = rules.find(
        (a) =>
          a.left > 0 &&
          (a.rule.method === undefined || a.rule.method === method) &&
          a.rule.path.test(path) &&
          (a.rule.body === undefined || a.rule.body.test(body.toString("utf8"))),
      );
      if (!armed) {
        forward(req, res, body, path, "forwarded");
        return;
      }
      armed.left--;
      const { rule } = armed;
      if (rule.action === "fail") {
        log.push({ method, path, outcome: "failed", status: rule.status });
        res.writeHead(rule.status, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            kind: "Status",
            apiVersion: "v1",
            status: "Failure",
            message: "failed by the test's API proxy",
            reason: "InternalError",
            code: rule.status,
          }),
        );
        armed.hit({ method, path, release: () => undefined });
        return;
      }
      if (rule.action === "drop") {
        log.push({ method, path, outcome: "dropped" });
        res.socket?.destroy();
        armed.hit({ method, path, release: () => undefined });
        return;
      }
      let settled = false;
      const held = {
        method,
        path,
        release() {
          if (settled) return;
          settled = true;
          armed.held.delete(held);
          forward(req, res, body, path, "released");
        },
        drop() {
          res.socket?.destroy();
        },
      };
      log.push({ method, path, outcome: "held" });
      // The client went away (killed) while its request was held: it never reaches the server.
      res.once("close", () => {
        if (settled) return;
        settled = true;
        armed.held.delete(held);
        log.push({ method, path, outcome: "discarded" });
      });
      armed.held.add(held);
      armed.hit(held);
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    log,
    arm(rule) {
      let hit!: (request: HeldRequest) => void;
      const first = new Promise<HeldRequest>((resolve) => (hit = resolve));
      const armed: Armed = { rule, left: rule.times ?? Infinity, held: new Set(), hit };
      rules.push(armed);
      return {
        hit: first,
        async waitForHit(what, timeoutMs = 30_000) {
          let timer: NodeJS.Timeout | undefined;
          const timeout = new Promise<never>((_, fail) => {
            timer = setTimeout(() => fail(new Error(`no request matched: ${what}`)), timeoutMs);
          });
          try {
            return await Promise.race([first, timeout]);
          } finally {
            clearTimeout(timer);
          }
        },
        get held() {
          return [...armed.held];
        },
        remove() {
          const i = rules.indexOf(armed);
          if (i >= 0) rules.splice(i, 1);
        },
      };
    },
    tap(match) {
      const tap = { match, requests: [] as TappedRequest[], chunks: [] as Buffer[] };
      taps.push(tap);
      return {
        requests: tap.requests,
        get bytes() {
          return tap.chunks.reduce((n, c) => n + c.length, 0);
        },
        // Searched in the whole of the answers, so a value split across two chunks is found.
        carried: (needle) => Buffer.concat(tap.chunks).includes(needle),
        remove() {
          const i = taps.indexOf(tap);
          if (i >= 0) taps.splice(i, 1);
        },
      };
    },
    reset() {
      const all = rules.splice(0);
      for (const armed of all) for (const held of armed.held) held.drop();
    },
    async close() {
      taps.splice(0);
      for (const armed of rules.splice(0)) armed.held.clear();
      for (const res of open) res.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      agent.destroy();
    },
  };
}
