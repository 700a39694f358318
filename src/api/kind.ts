// A kind is defined once: its zod schemas give the TypeScript types, the
// operator's own validation, and (through toCustomResourceDefinition) the
// CRD's OpenAPI schema, CEL rules, printer columns and descriptions.
import { stringify } from "yaml";
import { z } from "zod";
import type { CelRule } from "./fields.ts";
import { group, version } from "./group.ts";

export interface PrinterColumn {
  name: string;
  type: "string" | "integer" | "number" | "boolean" | "date";
  jsonPath: string;
  description?: string;
  priority?: number;
}

/** The Ready condition's status, and its reason in wide output, as every managed kind shows them. */
export const readyColumns: PrinterColumn[] = [
  { name: "Ready", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
  { name: "Reason", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].reason', priority: 1 },
];

export const ageColumn: PrinterColumn = {
  name: "Age",
  type: "date",
  jsonPath: ".metadata.creationTimestamp",
};

export interface KindDefinition<Spec extends z.ZodType, Status extends z.ZodType> {
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  /**
   * Namespaced (the default) or Cluster. A cluster-scoped kind is configuration an administrator
   * writes: it joins no category, so `kubectl get neon` in a namespace never asks for it (a
   * namespace's user could not list it, and the whole command would fail).
   */
  scope?: "Namespaced" | "Cluster";
  description: string;
  spec: Spec;
  /** What the operator reports; a kind without one (configuration it only reads) has no status. */
  status?: Status;
  printerColumns: PrinterColumn[];
}

export interface DefinedKind<Spec extends z.ZodType, Status extends z.ZodType> extends KindDefinition<
  Spec,
  Status
> {
  group: string;
  version: string;
  apiVersion: string;
  /** The CRD's metadata.name: `<plural>.<group>`. */
  crdName: string;
}

export function defineKind<Spec extends z.ZodType, Status extends z.ZodType = z.ZodNever>(
  definition: KindDefinition<Spec, Status>,
): DefinedKind<Spec, Status> {
  return {
    ...definition,
    group,
    version,
    apiVersion: `${group}/${version}`,
    crdName: `${definition.plural}.${group}`,
  };
}

type JsonSchema = Record<string, unknown>;

/**
 * Turns zod's JSON Schema into a Kubernetes structural schema: no `$schema`,
 * no unions of types (a union of strings is one string with both rules kept
 * as CEL alternatives), and no JavaScript-only bounds.
 */
function structural(schema: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "$schema") continue;
    if (key === "maximum" && value === Number.MAX_SAFE_INTEGER) continue;
    if (key === "minimum" && value === Number.MIN_SAFE_INTEGER) continue;
    if (key === "properties" && value && typeof value === "object") {
      out[key] = Object.fromEntries(
        Object.entries(value as Record<string, JsonSchema>).map(([k, v]) => [k, structural(v)]),
      );
    } else if ((key === "items" || key === "additionalProperties") && value && typeof value === "object") {
      out[key] = structural(value as JsonSchema);
    } else {
      out[key] = value;
    }
  }
  const alternatives = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (alternatives) return mergeStringAlternatives(out, alternatives);
  return out;
}

/**
 * `"never" | <duration>` and the like: structural schemas forbid type unions,
 * so the alternatives become one string whose pattern accepts either, with
 * each alternative's CEL rules guarded to apply only to its own values.
 */
function mergeStringAlternatives(outer: JsonSchema, alternatives: JsonSchema[]): JsonSchema {
  const parts = alternatives.map((a) => structural(a));
  if (!parts.every((p) => p.type === "string")) {
    throw new Error("CRD schemas support unions of strings only");
  }
  const { anyOf: _a, oneOf: _o, ...rest } = outer;
  const patterns: string[] = [];
  const rules: CelRule[] = [];
  const literals: string[] = [];
  for (const p of parts) {
    if (Array.isArray(p.enum)) literals.push(...(p.enum as string[]));
    else if (typeof p.const === "string") literals.push(p.const);
    else if (typeof p.pattern === "string") patterns.push(p.pattern.replace(/^\^|\$$/g, ""));
    const own = p["x-kubernetes-validations"] as CelRule[] | undefined;
    if (own) rules.push(...own);
  }
  const isLiteral = literals.map((l) => `self == '${l}'`).join(" || ");
  const escaped = literals.map((l) => l.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return {
    ...rest,
    type: "string",
    pattern: `^(${[...escaped, ...patterns.map((p) => `(${p})`)].join("|")})$`,
    ...(rules.length > 0
      ? {
          "x-kubernetes-validations": rules.map((r) => ({
            ...r,
            rule: isLiteral ? `${isLiteral} || (${r.rule})` : r.rule,
          })),
        }
      : {}),
  };
}

const validationsKey = "x-kubernetes-validations";

/**
 * The CEL rules of a field at every level it has them. zod's metadata is one object per schema,
 * and a `.meta()` on a wrapper (`.optional().meta(immutable("ttl"))`) or a second `.meta()` on
 * the same schema replaces the key the level beneath had, so the JSON Schema would carry only the
 * outermost rules: a duration's minimum would vanish behind its immutability. Rules add up
 * instead, innermost first: what the wrapped value must be, then what the wrappers add.
 */
function celRules(schema: z.core.$ZodType): CelRule[] {
  const rules: CelRule[] = [];
  const add = (list: CelRule[]) => {
    for (const r of list) if (!rules.some((x) => x.rule === r.rule && x.message === r.message)) rules.push(r);
  };
  const inner = (schema._zod.def as { innerType?: z.core.$ZodType }).innerType;
  if (inner) add(celRules(inner));
  // The `.meta()`/`.describe()` clones, oldest first; a clone inherits its parent's metadata, so
  // only a level whose rules differ from its parent's declared them.
  const chain: z.core.$ZodType[] = [];
  for (let s: z.core.$ZodType | undefined = schema; s; s = s._zod.parent) chain.unshift(s);
  for (const level of chain) {
    const own = z.globalRegistry.get(level)?.[validationsKey] as CelRule[] | undefined;
    const parent = level._zod.parent;
    const inherited = parent && z.globalRegistry.get(parent)?.[validationsKey];
    if (own && own !== inherited) add(own);
  }
  return rules;
}

export function openApiSchema(schema: z.ZodType): JsonSchema {
  return structural(
    z.toJSONSchema(schema, {
      target: "openapi-3.0",
      io: "input",
      override: ({ zodSchema, jsonSchema }) => {
        const rules = celRules(zodSchema);
        if (rules.length > 0) jsonSchema[validationsKey] = rules;
      },
    }),
  );
}

/**
 * The status schema, defaulted so that an object the operator has not written to yet reads
 * `status: {observedGeneration: 0}` rather than no status at all. The API server applies the
 * defaults whenever it reads the object, so every client sees them: kstatus (Flux, `kubectl
 * wait`, cli-utils) then reads "generation 1 not yet observed" (InProgress) instead of taking a
 * status-less object for Current. The default claims nothing: generation 0 was never observed.
 */
function statusSchema(schema: z.ZodType): JsonSchema {
  const status = openApiSchema(schema);
  const properties = status.properties as Record<string, JsonSchema> | undefined;
  const observed = properties?.observedGeneration;
  if (observed === undefined) throw new Error("every status has observedGeneration");
  return {
    ...status,
    default: {},
    properties: { ...properties, observedGeneration: { ...observed, default: 0 } },
  };
}

export function toCustomResourceDefinition(def: DefinedKind<z.ZodType, z.ZodType>): JsonSchema {
  const namespaced = (def.scope ?? "Namespaced") === "Namespaced";
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: {
      name: def.crdName,
      labels: { "app.kubernetes.io/part-of": "neon-cloud-operator" },
    },
    spec: {
      group: def.group,
      scope: def.scope ?? "Namespaced",
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: def.shortNames,
        ...(namespaced ? { categories: ["neon"] } : {}),
      },
      versions: [
        {
          name: def.version,
          served: true,
          storage: true,
          ...(def.status ? { subresources: { status: {} } } : {}),
          additionalPrinterColumns: def.printerColumns,
          schema: {
            openAPIV3Schema: {
              type: "object",
              description: def.description,
              required: ["spec"],
              properties: {
                apiVersion: { type: "string" },
                kind: { type: "string" },
                metadata: { type: "object" },
                spec: openApiSchema(def.spec),
                ...(def.status ? { status: statusSchema(def.status) } : {}),
              },
            },
          },
        },
      ],
    },
  };
}

const header =
  "# Generated from src/api by `npm run generate`; do not edit. A test fails when this file is stale.\n";

export function renderCrdYaml(def: DefinedKind<z.ZodType, z.ZodType>): string {
  return header + stringify(toCustomResourceDefinition(def), { lineWidth: 0 });
}
