// Reading request bodies and writing the platform's JSON responses.
import type { IncomingMessage, ServerResponse } from "node:http";
import { PlatformError } from "./errors.ts";

/** The body parsed as JSON (undefined when empty); 413 past `maxBytes`, 400 when not JSON. */
export function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on("error", reject);
    req.on("end", () => {
      if (tooLarge) {
        reject(new PlatformError(413, `request body is larger than ${maxBytes} bytes`));
        return;
      }
      const text = Buffer.concat(chunks).toString("utf8");
      if (text.trim() === "") {
        resolve(undefined);
        return;
      }
      try {
        resolve(JSON.parse(text));
      } catch {
        reject(new PlatformError(400, "request body is not valid JSON"));
      }
    });
  });
}

export function sendJson(
  res: ServerResponse,
  status: number,
  json: string | Buffer,
  requestId: string,
): void {
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(json),
    "x-request-id": requestId,
  });
  res.end(json);
}

export function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  requestId: string,
  code = "",
): void {
  sendJson(res, status, JSON.stringify({ code, message, request_id: requestId }), requestId);
}

export function sendEmpty(res: ServerResponse, status: number, requestId: string): void {
  res.writeHead(status, { "x-request-id": requestId });
  res.end();
}
