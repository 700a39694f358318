// The few tar operations a data directory needs: PGlite dumps a cluster as a ustar archive, and a
// point-in-time copy is the same archive with some of its WAL files replaced. Entries keep their
// original headers, so only files of unchanged size are ever swapped (WAL segments are).

export interface TarEntry {
  /** The path as the archive names it (PGlite's start with "/"). */
  name: string;
  /** The 512-byte header, reused as it is when the archive is written again. */
  header: Buffer;
  data: Buffer;
}

const block = 512;

function field(header: Buffer, offset: number, length: number): string {
  const text = header.subarray(offset, offset + length).toString("latin1");
  const end = text.indexOf("\0");
  return end < 0 ? text : text.slice(0, end);
}

/** The entries of a ustar archive, in order. */
export function readTar(archive: Buffer): TarEntry[] {
  const entries: TarEntry[] = [];
  let offset = 0;
  while (offset + block <= archive.length) {
    const header = archive.subarray(offset, offset + block);
    if (header.every((byte) => byte === 0)) break;
    const name = field(header, 0, 100);
    const prefix = field(header, 345, 155);
    const size = Number.parseInt(field(header, 124, 12).trim() || "0", 8);
    const start = offset + block;
    entries.push({
      name: prefix ? `${prefix}/${name}` : name,
      header: Buffer.from(header),
      data: archive.subarray(start, start + size),
    });
    offset = start + Math.ceil(size / block) * block;
  }
  return entries;
}

/** An archive of `entries` (each header already describes its data's size). */
export function writeTar(entries: readonly TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    parts.push(entry.header, entry.data);
    const padding = (block - (entry.data.length % block)) % block;
    if (padding > 0) parts.push(Buffer.alloc(padding));
  }
  parts.push(Buffer.alloc(2 * block));
  return Buffer.concat(parts);
}
