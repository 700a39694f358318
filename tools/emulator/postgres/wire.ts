// The few messages of the Postgres wire protocol the authenticating front
// speaks itself: the client's first packets (TLS/GSS requests, cancel, the
// startup message), the password exchange, and an error response.

/** Codes of the untyped first packets. */
const sslRequestCode = 80877103;
const gssEncRequestCode = 80877104;
const cancelRequestCode = 80877102;

export type FirstPacket =
  | { kind: "encryption-request" }
  | { kind: "cancel" }
  | { kind: "startup"; packet: Buffer; params: Map<string, string> }
  | { kind: "unsupported"; reason: string };

/** The first complete untyped packet at the start of `buffer`, and its length; undefined when incomplete. */
export function readFirstPacket(buffer: Buffer): { packet: FirstPacket; length: number } | undefined {
  if (buffer.length < 8) return undefined;
  const length = buffer.readInt32BE(0);
  if (length < 8 || length > 10_000) {
    return {
      packet: { kind: "unsupported", reason: "invalid startup packet length" },
      length: buffer.length,
    };
  }
  if (buffer.length < length) return undefined;
  const code = buffer.readInt32BE(4);
  if (code === sslRequestCode || code === gssEncRequestCode)
    return { packet: { kind: "encryption-request" }, length };
  if (code === cancelRequestCode) return { packet: { kind: "cancel" }, length };
  if (code >> 16 !== 3) {
    return { packet: { kind: "unsupported", reason: `unsupported frontend protocol ${code >> 16}` }, length };
  }
  const params = new Map<string, string>();
  const parts = buffer.subarray(8, length).toString("utf8").split("\0");
  for (let i = 0; i + 1 < parts.length && parts[i] !== ""; i += 2) params.set(parts[i]!, parts[i + 1]!);
  return { packet: { kind: "startup", packet: Buffer.from(buffer.subarray(0, length)), params }, length };
}

/** A typed message ('p' for a password) at the start of `buffer`; undefined when incomplete. */
export function readMessage(buffer: Buffer): { type: string; body: Buffer; length: number } | undefined {
  if (buffer.length < 5) return undefined;
  const length = 1 + buffer.readInt32BE(1);
  if (buffer.length < length) return undefined;
  return { type: String.fromCharCode(buffer[0]!), body: buffer.subarray(5, length), length };
}

/** AuthenticationCleartextPassword: the front checks the password itself, as the platform's proxy does. */
export function cleartextPasswordRequest(): Buffer {
  const message = Buffer.alloc(9);
  message.write("R", 0);
  message.writeInt32BE(8, 1);
  message.writeInt32BE(3, 5);
  return message;
}

/** A password message's text (without its terminating NUL). */
export const passwordOf = (body: Buffer): string =>
  body.subarray(0, Math.max(0, body.length - 1)).toString("utf8");

/** A FATAL ErrorResponse with an SQLSTATE `code`. */
export function fatalError(code: string, message: string): Buffer {
  const fields = Buffer.from(`SFATAL\0VFATAL\0C${code}\0M${message}\0\0`, "utf8");
  const header = Buffer.alloc(5);
  header.write("E", 0);
  header.writeInt32BE(4 + fields.length, 1);
  return Buffer.concat([header, fields]);
}
