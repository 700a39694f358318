// Log sequence numbers in Postgres' own text form, `16/B374D848`: the high and low 32 bits of a
// WAL position in hexadecimal. The platform shows a branch's points (`parent_lsn`, a snapshot's
// `lsn`) in this form.

/** The position `text` names, or undefined when it is not an LSN. */
export function parseLsn(text: string): number | undefined {
  const match = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text);
  if (!match?.[1] || !match[2]) return undefined;
  return Number.parseInt(match[1], 16) * 2 ** 32 + Number.parseInt(match[2], 16);
}

/** `%X/%X`, as Postgres prints an LSN (upper case, no padding). */
export function formatLsn(position: number): string {
  const high = Math.floor(position / 2 ** 32);
  const low = position % 2 ** 32;
  return `${high.toString(16).toUpperCase()}/${low.toString(16).toUpperCase()}`;
}
