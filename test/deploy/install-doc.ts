// The shell steps of docs/install.md, as a reader copies them: every ```sh block there is tagged
// `step:<name>` in its info string (GitHub shows it as plain sh), and the tests run the steps
// they know by name (install-doc.kube.test.ts) or read what they grant (rbac.test.ts).
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { repoRoot } from "./render.ts";

export const installDocPath = join(repoRoot, "docs", "install.md");

export interface DocStep {
  name: string;
  /** The block's text, as a shell script. */
  script: string;
  /** 1-based line of the opening fence, for messages. */
  line: number;
}

/** Every `sh` block of docs/install.md by step name; a block without a step name, or a name used twice, throws. */
export async function installDocSteps(path = installDocPath): Promise<Map<string, DocStep>> {
  const lines = (await readFile(path, "utf8")).split("\n");
  const steps = new Map<string, DocStep>();
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```sh\b(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const name = /\bstep:([a-z0-9-]+)/.exec(open[2]!)?.[1];
    if (!name) throw new Error(`${path}:${i + 1}: a sh block without a step:<name> tag`);
    if (steps.has(name)) throw new Error(`${path}:${i + 1}: step ${name} appears twice`);
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]!); i++) body.push(lines[i]!.slice(indent));
    steps.set(name, { name, script: `${body.join("\n")}\n`, line: i - body.length });
  }
  return steps;
}

/** The script's commands, one per entry: continuation lines joined, comments and blank lines left out (no heredocs). */
export function commands(script: string): string[] {
  return script
    .replace(/\\\n\s*/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith("#"));
}
