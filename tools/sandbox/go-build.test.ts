// What a person sees while Go builds a tool on a fresh machine: the phases (modules downloaded,
// packages compiled) with counts and a share done, a handful of lines, never the go command's
// line per module or per package; and on failure, the go command's own error.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BuildProgress, buildGoTools } from "./go-build.ts";

const exec = promisify(execFile);

describe("BuildProgress", () => {
  it("turns 170 downloads and 2,500 compiled packages into a dozen lines", () => {
    const lines: string[] = [];
    const progress = new BuildProgress("controlplane", (l) => lines.push(l));
    for (let i = 0; i < 170; i++) progress.listing(`go: downloading example.com/m${i} v1.0.${i}`);
    for (let i = 0; i < 2500; i++) progress.listing(`example.com/m${i % 170}/pkg${i}`);
    progress.compiling("about 7 minutes on 2 cores");
    for (let i = 0; i < 2500; i++) progress.built(`example.com/m${i % 170}/pkg${i}`);
    expect(lines.length).toBeLessThanOrEqual(14);
    expect(lines.join("\n")).not.toMatch(/go: downloading|pkg\d/);
    expect(lines).toContain("controlplane: downloading Go modules from the module proxy...");
    expect(lines.some((l) => /^controlplane: downloaded 170 Go modules in \d+ s$/.test(l))).toBe(true);
    expect(lines).toContain("controlplane: compiling 2500 Go packages (about 7 minutes on 2 cores)...");
    expect(lines.some((l) => /^controlplane: compiling: 50% \(1250 of 2500 packages, \d+ s\)$/.test(l))).toBe(
      true,
    );
    expect(progress.other).toEqual([]);
  });

  it("keeps what is neither a download nor a package: the go command's errors", () => {
    const progress = new BuildProgress("x", () => undefined);
    progress.built("example.com/m/pkg");
    progress.built("./main.go:3:2: undefined: nope");
    expect(progress.other).toEqual(["./main.go:3:2: undefined: nope"]);
  });
});

describe("buildGoTools on a module with a dependency, nothing downloaded yet", () => {
  let dir: string;
  const saved = { ...process.env };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "go-build-"));
    process.env.GOMODCACHE = join(dir, "modcache");
    process.env.NEON_CONTROLPLANE_CACHE = join(dir, "cache");
    const module = join(dir, "module");
    await exec("mkdir", ["-p", module]);
    await writeFile(
      join(module, "go.mod"),
      "module example.com/hello\n\ngo 1.26.0\n\nrequire github.com/spf13/pflag v1.0.9\n",
    );
    await writeFile(
      join(module, "go.sum"),
      [
        "github.com/spf13/pflag v1.0.9 h1:9exaQaMOCwffKiiiYk6/BndUBv+iRViNW+4lEMi0PvY=",
        "github.com/spf13/pflag v1.0.9/go.mod h1:McXfInJRrz4CZXVZOBLb0bTZqETkiAhM9Iw0y3An2Bg=",
        "",
      ].join("\n"),
    );
    await writeFile(
      join(module, "main.go"),
      'package main\n\nimport "github.com/spf13/pflag"\n\nfunc main() { pflag.Parse() }\n',
    );
  });

  afterAll(async () => {
    process.env = saved;
    // The module cache is read-only by design.
    await exec("chmod", ["-R", "u+w", dir]).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  it("says each phase once, with counts, and the build's time", { timeout: 300_000 }, async () => {
    const lines: string[] = [];
    const binary = join(dir, "bin", "hello");
    await buildGoTools(
      join(dir, "module"),
      [{ pkg: ".", binary, ldflags: ["-s", "-w"], describe: "hello: building", expect: "seconds" }],
      (l) => lines.push(l),
    );
    expect(existsSync(binary)).toBe(true);
    const text = lines.filter((l) => !l.startsWith("go: ")).join("\n"); // a Go fetch says its own lines
    expect(text).toMatch(/^hello: building$/m);
    expect(text).toMatch(/^hello: downloaded 1 Go modules in \d+ s$/m);
    expect(text).toMatch(/^hello: compiling \d+ Go packages \(seconds\)\.\.\.$/m);
    expect(text).toMatch(/^hello: built in \d+ s \(/m);
    expect(text).not.toMatch(/go: downloading|github\.com\/spf13\/pflag$/m);
  });

  it("fails with the compiler's words, not its progress", { timeout: 300_000 }, async () => {
    await writeFile(join(dir, "module", "main.go"), "package main\n\nfunc main() { nope() }\n");
    const build = buildGoTools(
      join(dir, "module"),
      [{ pkg: ".", binary: join(dir, "bin", "broken"), ldflags: [], describe: "broken" }],
      () => undefined,
    );
    await expect(build).rejects.toThrow(/undefined: nope/);
  });
});
