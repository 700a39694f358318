// Writing one bench's section of docs/performance.md, keeping every other section as it is (other
// benches write them; the page is not formatted as a whole, only the section is aligned).
import { readFile, writeFile } from "node:fs/promises";

/** Replaces (or appends) the section that starts with `section`'s first line, a `## ` heading. */
export async function writeSection(path: string, section: string): Promise<void> {
  const page = await readFile(path, "utf8").catch(() => "");
  const prettier = await import("prettier");
  const options = (await prettier.resolveConfig(path)) ?? {};
  const formatted = (await prettier.format(section, { ...options, parser: "markdown" })).trimEnd();
  const heading = formatted.slice(0, formatted.indexOf("\n") < 0 ? undefined : formatted.indexOf("\n"));
  if (!heading.startsWith("## ")) throw new Error(`a section starts with a "## " heading, not "${heading}"`);
  const start = page.indexOf(`${heading}\n`);
  let next: string;
  if (start < 0) {
    next = `${page.trimEnd()}\n\n${formatted}\n`;
  } else {
    const after = page.indexOf("\n## ", start + heading.length);
    next = `${page.slice(0, start)}${formatted}\n${after < 0 ? "" : `\n${page.slice(after + 1)}`}`;
  }
  await writeFile(path, next);
}

/** Prints a bench's section, and writes it into the page unless the run says `--no-write`. */
export async function reportSection(
  command: string,
  section: string,
  values: { out: string; "no-write": boolean },
): Promise<void> {
  process.stdout.write(`\n${section}\n`);
  if (values["no-write"]) return;
  await writeSection(values.out, section);
  process.stdout.write(`${command}: wrote the section of ${values.out}\n`);
}
