/**
 * A tiny HTTP server answering with scripted responses, for the few platform behaviours the
 * emulator cannot produce (a 429 carrying Retry-After, a body that breaks the contract).
 */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

export interface ScriptedResponse {
  status: number;
  headers?: Record<string, string>;
  body: unknown;
}

export interface ScriptedServer {
  baseUrl: string;
  /** Requests received so far. */
  readonly received: { method: string; url: string; authorization: string | undefined }[];
  close(): Promise<void>;
}

export async function startScriptedServer(
  respond: (request: IncomingMessage, index: number) => ScriptedResponse,
): Promise<ScriptedServer> {
  const received: ScriptedServer["received"] = [];
  const server = createServer((req, res) => {
    const index = received.length;
    received.push({ method: req.method ?? "", url: req.url ?? "", authorization: req.headers.authorization });
    req.resume();
    req.on("end", () => {
      const answer = respond(req, index);
      const json = JSON.stringify(answer.body);
      res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
      res.end(json);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/api/v2`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
