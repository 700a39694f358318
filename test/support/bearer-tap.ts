// A pass-through HTTP proxy in front of the platform (the emulator) that
// remembers which bearer tokens were sent, as SHA-256 digests only: a test can
// ask "was this value ever sent to the platform as a key?" without the proxy
// holding, or a failure printing, any key. The emulator's own request log
// keeps no headers, so it cannot answer that.
import { createHash } from "node:crypto";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";

export interface BearerTap {
  /** The platform URL to hand the operator (the target's path kept, e.g. `/api/v2`). */
  url: string;
  /** Requests forwarded so far. */
  readonly requests: number;
  /** Whether any request carried `value` as its bearer token. */
  sent(value: string): boolean;
  close(): Promise<void>;
}

const digest = (value: string) => createHash("sha256").update(value).digest("hex");

/** Starts the tap in front of `target` (an http URL such as the emulator's `url`). */
export async function startBearerTap(target: string): Promise<BearerTap> {
  const upstream = new URL(target);
  const seen = new Set<string>();
  let requests = 0;
  const server = createServer((req, res) => {
    requests++;
    const token = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "")?.[1];
    if (token !== undefined) seen.add(digest(token));
    const out = request(
      {
        hostname: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: upstream.host },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on("error", () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${upstream.pathname.replace(/\/$/, "")}`,
    get requests() {
      return requests;
    },
    sent: (value) => seen.has(digest(value)) || seen.has(digest(value.trim())),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
