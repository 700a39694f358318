// The rules of the tree's structure (.dependency-cruiser.json), checked by dependency-cruiser: they
// hold on the sources, and a deliberate violation of each is caught (so a rule that matches
// nothing cannot pass for one that holds).
import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const root = join(import.meta.dirname, "..", "..");
const depcruise = join(root, "node_modules", ".bin", "depcruise");

interface Violation {
  from: string;
  to: string;
  rule: { name: string };
}

/** The violations dependency-cruiser finds under `dir` with the project's rules. */
async function violations(dir: string): Promise<Violation[]> {
  const config = join(root, ".dependency-cruiser.json");
  const { stdout } = await run(depcruise, ["--config", config, "--output-type", "json", "src"], {
    cwd: dir,
    maxBuffer: 64 * 1024 * 1024,
  }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? "" }));
  return (JSON.parse(stdout) as { summary: { violations: Violation[] } }).summary.violations;
}

const made: string[] = [];
afterAll(async () => {
  for (const dir of made) await rm(dir, { recursive: true, force: true });
});

/** A tree of `files` (path → source) beside the project's tsconfig. */
async function tree(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "structure-"));
  made.push(dir);
  await cp(join(root, "tsconfig.json"), join(dir, "tsconfig.json"));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}

describe("the structure of the sources", () => {
  it("holds: no kind imports another, the layer knows no platform, platform and runtime stay apart", async () => {
    expect(await violations(root)).toEqual([]);
  });

  it.each<[string, Record<string, string>]>([
    [
      "kind-imports-kind",
      {
        "src/controllers/branch/index.ts":
          'import { x } from "../computeendpoint/index.ts";\nexport const y = x;\n',
        "src/controllers/computeendpoint/index.ts": "export const x = 1;\n",
      },
    ],
    [
      "managed-knows-no-platform",
      {
        "src/controllers/managed/lifecycle.ts":
          'import type { P } from "../../platform/index.ts";\nexport type Q = P;\n',
        "src/platform/index.ts": "export type P = number;\n",
      },
    ],
    [
      "kind-imports-outside-its-layers",
      {
        "src/controllers/project/index.ts": 'import { r } from "../registry.ts";\nexport const y = r;\n',
        "src/controllers/registry.ts": "export const r = 1;\n",
      },
    ],
    [
      "runtime-knows-no-platform",
      {
        "src/runtime/controller.ts": 'import { p } from "../platform/index.ts";\nexport const y = p;\n',
        "src/platform/index.ts": "export const p = 1;\n",
      },
    ],
    [
      "platform-knows-no-runtime",
      {
        "src/platform/client.ts": 'import { r } from "../runtime/index.ts";\nexport const y = r;\n',
        "src/runtime/index.ts": "export const r = 1;\n",
      },
    ],
    [
      "no-circular-controllers",
      {
        "src/controllers/managed/a.ts": 'import { b } from "./b.ts";\nexport const a = b;\n',
        "src/controllers/managed/b.ts": 'import { a } from "./a.ts";\nexport const b = () => a;\n',
      },
    ],
  ])("catches %s", async (rule, files) => {
    const found = await violations(await tree(files));
    expect(found.map((v) => v.rule.name)).toContain(rule);
  });
});
