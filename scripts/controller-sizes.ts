// The sizes of the managed layer and of each kind, in lines of their non-test files: written into
// docs/controllers.md by `npm run generate` and checked by src/controllers/sizes.test.ts, so the
// figures there cannot drift from the code.
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { format, resolveConfig } from "prettier";

const root = join(import.meta.dirname, "..");
const controllers = join(root, "src", "controllers");
const begin = "<!-- sizes:begin (npm run generate) -->";
const end = "<!-- sizes:end -->";

interface Size {
  folder: string;
  files: number;
  lines: number;
  /** Lines that are neither blank nor only a comment. */
  code: number;
}

async function size(folder: string): Promise<Size> {
  const names = (await readdir(join(controllers, folder))).filter(
    (f) => f.endsWith(".ts") && !f.endsWith(".test.ts"),
  );
  let lines = 0;
  let code = 0;
  for (const name of names) {
    const text = (await readFile(join(controllers, folder, name), "utf8")).replace(/\n$/, "");
    const all = text.split("\n");
    lines += all.length;
    code += all.filter((l) => !/^\s*($|\/\/|\/\*|\*)/.test(l)).length;
  }
  return { folder, files: names.length, lines, code };
}

/** The table: the layer first, then each kind's folder. */
export async function sizesTable(): Promise<string> {
  const entries = await readdir(controllers, { withFileTypes: true });
  const kinds = entries
    .filter((e) => e.isDirectory() && e.name !== "managed")
    .map((e) => e.name)
    .sort();
  const rows = [await size("managed"), ...(await Promise.all(kinds.map(size)))];
  return [
    "| Folder | Files | Lines | Code lines (no blank or comment line) |",
    "| --- | --- | --- | --- |",
    ...rows.map((r) => `| \`src/controllers/${r.folder}/\` | ${r.files} | ${r.lines} | ${r.code} |`),
  ].join("\n");
}

export const controllersDoc = join(root, "docs", "controllers.md");

/** docs/controllers.md with the current table between its markers, formatted as the formatter would. */
export async function withSizes(doc: string): Promise<string> {
  const from = doc.indexOf(begin);
  const to = doc.indexOf(end);
  if (from < 0 || to < from) throw new Error(`docs/controllers.md has no ${begin} … ${end} section`);
  const next = `${doc.slice(0, from + begin.length)}\n\n${await sizesTable()}\n\n${doc.slice(to)}`;
  const options = await resolveConfig(controllersDoc);
  return format(next, { ...options, filepath: controllersDoc });
}
