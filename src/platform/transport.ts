/**
 * One HTTP exchange with the platform over a keep-alive undici pool. It knows nothing about
 * routes, retries or budgets; it reports either a response or a failure, and for a failure
 * whether the request certainly never reached the platform (the only case in which a mutation
 * may be sent again).
 */
import { Pool } from "undici";

export interface TransportTimeouts {
  /** Time to establish a TCP/TLS connection. Default 10 s. */
  connectTimeoutMs?: number;
  /** Time from sending the request to receiving the response headers. Default 30 s. */
  headersTimeoutMs?: number;
  /** Maximum idle time while receiving the body. Default 30 s. */
  bodyTimeoutMs?: number;
}

export interface TransportOptions extends TransportTimeouts {
  baseUrl: string;
  apiKey: string;
  /** Maximum sockets kept open to the platform. Default 32. */
  connections?: number;
}

export interface TransportRequest {
  method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE";
  /** Path below the base URL, already encoded, starting with "/". */
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  requestId: string;
  signal?: AbortSignal | undefined;
}

export type TransportResult =
  | { kind: "response"; status: number; headers: Record<string, string | string[] | undefined>; text: string }
  | { kind: "failure"; notSent: boolean; error: unknown };

/** Error codes that mean no byte of the request reached the platform. */
const NOT_SENT_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);

function errorCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && code !== "UND_ERR_SOCKET") return code;
    e = (e as { cause?: unknown }).cause;
  }
  return (error as { code?: string } | undefined)?.code;
}

export function failureCode(error: unknown): string {
  return errorCode(error) ?? "unknown";
}

export class Transport {
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly authorization: string;
  private readonly headersTimeoutMs: number;
  private readonly bodyTimeoutMs: number;

  constructor(options: TransportOptions) {
    const base = new URL(options.baseUrl);
    this.basePath = base.pathname.replace(/\/+$/, "");
    this.authorization = `Bearer ${options.apiKey}`;
    this.headersTimeoutMs = options.headersTimeoutMs ?? 30_000;
    this.bodyTimeoutMs = options.bodyTimeoutMs ?? 30_000;
    this.pool = new Pool(base.origin, {
      connections: options.connections ?? 32,
      connectTimeout: options.connectTimeoutMs ?? 10_000,
      headersTimeout: this.headersTimeoutMs,
      bodyTimeout: this.bodyTimeoutMs,
      keepAliveTimeout: 4_000,
    });
  }

  async send(request: TransportRequest): Promise<TransportResult> {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined) search.set(name, String(value));
    }
    const query = search.size > 0 ? `?${search.toString()}` : "";
    const headers: Record<string, string> = {
      accept: "application/json",
      authorization: this.authorization,
      "x-request-id": request.requestId,
    };
    let body: string | undefined;
    if (request.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(request.body);
    }
    try {
      const response = await this.pool.request({
        path: `${this.basePath}${request.path}${query}`,
        method: request.method,
        headers,
        body,
        signal: request.signal ?? null,
        headersTimeout: this.headersTimeoutMs,
        bodyTimeout: this.bodyTimeoutMs,
      });
      const text = await response.body.text();
      return { kind: "response", status: response.statusCode, headers: response.headers, text };
    } catch (error) {
      const code = errorCode(error);
      return { kind: "failure", notSent: code !== undefined && NOT_SENT_CODES.has(code), error };
    }
  }

  /** Closes the keep-alive connections; closing twice is harmless. */
  close(): Promise<void> {
    return this.pool.closed || this.pool.destroyed ? Promise.resolve() : this.pool.close();
  }
}
