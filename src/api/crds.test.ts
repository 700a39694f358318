// The committed CRDs are exactly what the schemas generate, so a schema
// change cannot ship without its CRD (run `npm run generate`).
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { crdFileName, kinds } from "./index.ts";
import { renderCrdYaml } from "./kind.ts";
import { rbacFiles } from "./rbac-files.ts";
import { referenceFileName, renderReference } from "./reference.ts";

const crdDir = join(import.meta.dirname, "..", "..", "crds");
const referenceDir = join(import.meta.dirname, "..", "..", "docs", "reference");

describe("generated CRDs", () => {
  for (const kind of kinds) {
    it(`crds/${crdFileName(kind)} matches the ${kind.kind} schema`, async () => {
      const committed = await readFile(join(crdDir, crdFileName(kind)), "utf8");
      expect(committed, "crds/ is stale: run `npm run generate`").toBe(renderCrdYaml(kind));
    });
    it(`docs/reference/${referenceFileName(kind)} documents the ${kind.kind} schema`, async () => {
      const committed = await readFile(join(referenceDir, referenceFileName(kind)), "utf8");
      expect(committed, "docs/reference is stale: run `npm run generate`").toBe(renderReference(kind));
    });
  }
});

describe("generated RBAC", () => {
  for (const [path, render] of Object.entries(rbacFiles)) {
    it(`${path} grants exactly the rules of src/api/rbac.ts`, async () => {
      const committed = await readFile(join(import.meta.dirname, "..", "..", path), "utf8");
      expect(committed, "RBAC is stale: run `npm run generate`").toBe(render());
    });
  }
});
