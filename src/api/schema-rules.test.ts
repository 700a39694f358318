// Every CEL rule a zod field declares reaches the CRD the API server enforces. A field may carry
// rules at several levels (a duration's bounds on the inner string, `immutable()` on the optional
// around it); the generator must keep all of them, not only the outermost. The CRDs read here are
// the committed files under crds/, so a rule dropped anywhere between the schema and what ships
// fails this test (crds.test.ts keeps them equal to the generator's output).
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { z } from "zod";
import type { CelRule } from "./fields.ts";
import { crdFileName, kinds } from "./index.ts";

type JsonSchema = Record<string, unknown>;
const validations = "x-kubernetes-validations";

/** Each level of a zod field: its `.meta()`/`.describe()` clones and what it wraps (optional, default, ...). */
function levels(schema: z.core.$ZodType): z.core.$ZodType[] {
  const out: z.core.$ZodType[] = [];
  const visit = (s: z.core.$ZodType | undefined): void => {
    for (let level = s; level; level = level._zod.parent) {
      if (out.includes(level)) return;
      out.push(level);
      visit((level._zod.def as { innerType?: z.core.$ZodType }).innerType);
    }
  };
  visit(schema);
  return out;
}

/** The CEL rules declared anywhere on a field, as zod's metadata registry holds them. */
function declared(schema: z.core.$ZodType): CelRule[] {
  const rules = levels(schema).flatMap(
    (level) => (z.globalRegistry.get(level)?.[validations] as CelRule[] | undefined) ?? [],
  );
  return rules.filter((r, i) => rules.findIndex((x) => x.rule === r.rule && x.message === r.message) === i);
}

/** The schema a field's value has, once wrappers (optional, default, ...) are taken off. */
function core(schema: z.core.$ZodType): z.core.$ZodType {
  let s = schema;
  for (;;) {
    const inner = (s._zod.def as { innerType?: z.core.$ZodType }).innerType;
    if (!inner) return s;
    s = inner;
  }
}

interface Finding {
  path: string;
  rule: string;
}

/** Walks a zod schema and the CRD's schema of it side by side; returns the rules the CRD lacks. */
function missing(schema: z.core.$ZodType, crd: JsonSchema | undefined, path: string): Finding[] {
  if (crd === undefined) return [{ path, rule: "(the CRD has no schema here)" }];
  const present = (crd[validations] as CelRule[] | undefined) ?? [];
  // A union of strings becomes one string whose rules are guarded per alternative (kind.ts): the
  // alternative's rule appears inside the guarded one.
  const found = (r: CelRule) => present.some((p) => p.message === r.message && p.rule.includes(r.rule));
  const out: Finding[] = declared(schema)
    .filter((r) => !found(r))
    .map((r) => ({ path, rule: r.message }));
  const value = core(schema);
  const def = value._zod.def as {
    type: string;
    shape?: Record<string, z.core.$ZodType>;
    element?: z.core.$ZodType;
    valueType?: z.core.$ZodType;
    options?: z.core.$ZodType[];
  };
  if (def.type === "object" && def.shape) {
    const properties = (crd.properties ?? {}) as Record<string, JsonSchema>;
    for (const [key, field] of Object.entries(def.shape))
      out.push(...missing(field, properties[key], `${path}.${key}`));
  } else if (def.type === "array" && def.element) {
    out.push(...missing(def.element, crd.items as JsonSchema | undefined, `${path}[]`));
  } else if (def.type === "record" && def.valueType) {
    out.push(...missing(def.valueType, crd.additionalProperties as JsonSchema | undefined, `${path}{}`));
  } else if (def.type === "union" && def.options) {
    for (const option of def.options) out.push(...missing(option, crd, path));
  }
  return out;
}

async function committedSchema(kind: (typeof kinds)[number]): Promise<JsonSchema> {
  const file = join(import.meta.dirname, "..", "..", "crds", crdFileName(kind));
  const crd = parse(await readFile(file, "utf8")) as {
    spec: { versions: { schema: { openAPIV3Schema: { properties: Record<string, JsonSchema> } } }[] };
  };
  const version = crd.spec.versions[0];
  if (!version) throw new Error(`${file} has no version`);
  return version.schema.openAPIV3Schema.properties;
}

describe("every CEL rule a field declares is in the CRD", () => {
  for (const kind of kinds) {
    it(`${kind.kind}: spec and status`, async () => {
      const schema = await committedSchema(kind);
      expect([
        ...missing(kind.spec, schema.spec as JsonSchema, "spec"),
        ...(kind.status ? missing(kind.status, schema.status as JsonSchema, "status") : []),
      ]).toEqual([]);
    });
  }

  it("finds the rules of every level of a field (the walk itself)", () => {
    const field = z
      .string()
      .meta({ [validations]: [{ rule: "a", message: "A" }] })
      .optional()
      .meta({ [validations]: [{ rule: "b", message: "B" }] });
    expect(declared(field).map((r) => r.message)).toEqual(["B", "A"]);
    const crd = { [validations]: [{ rule: "b", message: "B" }] };
    expect(missing(field, crd, "spec.ttl")).toEqual([{ path: "spec.ttl", rule: "A" }]);
  });
});
