// The platform's two time formats: whole-second ISO timestamps on every
// resource, and microsecond timestamps in operation pagination cursors.

/** `YYYY-MM-DDTHH:MM:SSZ`, as every timestamp field of the platform. */
export function formatTimestamp(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/** Microseconds since the epoch as a cursor: `2022-12-07T00:45:05.262011Z` (trailing zeros dropped). */
export function formatCursor(micros: number): string {
  const ms = Math.floor(micros / 1000);
  const seconds = new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19);
  const fraction = String(micros % 1_000_000)
    .padStart(6, "0")
    .replace(/0+$/, "");
  return fraction ? `${seconds}.${fraction}Z` : `${seconds}Z`;
}

/** Parses a cursor back to microseconds; undefined when it is not one. */
export function parseCursor(cursor: string): number | undefined {
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?Z$/.exec(cursor);
  if (!match?.[1]) return undefined;
  const seconds = Date.parse(`${match[1]}Z`);
  if (Number.isNaN(seconds)) return undefined;
  return seconds * 1000 + Number((match[2] ?? "").padEnd(6, "0"));
}
