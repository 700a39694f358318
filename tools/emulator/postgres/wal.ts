// A cluster as it was at a WAL position, built from two dumps of it: one taken before that
// position (its data files hold nothing newer) and one taken after (its WAL reaches the
// position). Postgres' crash recovery replays the WAL from the first dump's checkpoint to the
// end of valid WAL; ending the WAL at the position makes recovery stop there, so the copy holds
// exactly the transactions committed up to it. This is the platform's own model: a branch's
// history is its WAL, and a point in it is an LSN.
import { readTar, writeTar, type TarEntry } from "./tar.ts";

/** `pg_wal/<timeline 8 hex><log 8 hex><segment 8 hex>`: a WAL segment file. */
const segmentName = /pg_wal\/([0-9A-F]{8})([0-9A-F]{8})([0-9A-F]{8})$/;

/** The segment's number (its first byte's position ÷ the segment size), for a segment entry. */
function segmentNumber(entry: TarEntry, segmentSize: number): number | undefined {
  const match = segmentName.exec(entry.name);
  if (!match?.[2] || !match[3]) return undefined;
  return Number.parseInt(match[2], 16) * (2 ** 32 / segmentSize) + Number.parseInt(match[3], 16);
}

/**
 * The data directory of `before` with the WAL of `after`, ended at `position`. `before` is a dump
 * taken at or before the position (of a running cluster, so recovery runs when it loads) and
 * `after` one of the same cluster's later states. A segment missing from `after` (removed at a
 * checkpoint) is taken from `before`; segments past the position are left out.
 */
export function dataDirectoryAt(before: Buffer, after: Buffer, position: number): Buffer {
  const base = readTar(before);
  const later = readTar(after);
  const segments = [...base, ...later].filter((e) => segmentName.test(e.name));
  // Every segment has the cluster's segment size (16 MB by default).
  const segmentSize = segments[0]?.data.length;
  if (segmentSize === undefined || segmentSize === 0) throw new Error("the dump holds no WAL segment");
  const wal = new Map<string, TarEntry>();
  for (const entry of segments) wal.set(entry.name, entry); // the later dump's copy wins
  const last = Math.floor(position / segmentSize);
  const kept: TarEntry[] = [];
  for (const entry of wal.values()) {
    const number = segmentNumber(entry, segmentSize);
    if (number === undefined || number > last) continue;
    if (number < last) {
      kept.push(entry);
      continue;
    }
    // The position's own segment: zeros from the position on read as the end of the WAL.
    const data = Buffer.from(entry.data);
    data.fill(0, position % segmentSize);
    kept.push({ ...entry, data });
  }
  const files = base.filter((e) => !segmentName.test(e.name));
  return writeTar([...files, ...kept]);
}
