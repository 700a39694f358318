// Markdown reference of a kind, generated from the same OpenAPI schema the CRD
// carries, so the docs cannot disagree with what the API server enforces.
import type { z } from "zod";
import { openApiSchema, type DefinedKind } from "./kind.ts";

type Schema = Record<string, unknown>;

interface Row {
  path: string;
  type: string;
  required: boolean;
  details: string[];
}

function typeOf(s: Schema): string {
  if (Array.isArray(s.enum)) return (s.enum as unknown[]).map((v) => `\`${String(v)}\``).join(" \\| ");
  if (s.type === "array") return `array of ${typeOf((s.items as Schema | undefined) ?? {})}`;
  if (s.type === "object" && s.additionalProperties && !s.properties) {
    return `map of ${typeOf(s.additionalProperties as Schema)}`;
  }
  return typeof s.type === "string" ? s.type : "any";
}

function details(s: Schema): string[] {
  const out: string[] = [];
  if (typeof s.description === "string") out.push(s.description);
  if (s.default !== undefined) out.push(`Default: \`${JSON.stringify(s.default)}\`.`);
  if (typeof s.pattern === "string") out.push(`Pattern: \`${s.pattern}\`.`);
  if (typeof s.minimum === "number") out.push(`Minimum: ${s.minimum}.`);
  if (typeof s.maxLength === "number") out.push(`At most ${s.maxLength} characters.`);
  for (const rule of (s["x-kubernetes-validations"] as { message: string }[] | undefined) ?? []) {
    out.push(`Rule: ${rule.message}.`);
  }
  return out;
}

function rows(s: Schema, path: string, required: boolean, into: Row[]): Row[] {
  into.push({ path, type: typeOf(s), required, details: details(s) });
  const properties = s.properties as Record<string, Schema> | undefined;
  const requiredNames = new Set((s.required as string[] | undefined) ?? []);
  for (const [name, child] of Object.entries(properties ?? {})) {
    rows(child, `${path}.${name}`, requiredNames.has(name), into);
  }
  const items = s.items as Schema | undefined;
  if (items?.properties) rows(items, `${path}[]`, false, into);
  return into;
}

const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

function table(schema: Schema, root: string): string {
  const lines = ["| Field | Type | Required | Description |", "| --- | --- | --- | --- |"];
  for (const row of rows(schema, root, true, []).slice(1)) {
    lines.push(
      `| \`${row.path}\` | ${row.type.includes("`") ? row.type : cell(row.type)} | ${row.required ? "yes" : ""} | ${cell(row.details.join(" "))} |`,
    );
  }
  return lines.join("\n");
}

export function renderReference(def: DefinedKind<z.ZodType, z.ZodType>): string {
  const spec = openApiSchema(def.spec);
  const status = def.status ? openApiSchema(def.status) : undefined;
  const namespaced = (def.scope ?? "Namespaced") === "Namespaced";
  const specRules = (spec["x-kubernetes-validations"] as { message: string }[] | undefined) ?? [];
  return [
    "<!-- Generated from src/api by `npm run generate`; do not edit. -->",
    "",
    `# ${def.kind}`,
    "",
    `\`${def.apiVersion}\`, ${namespaced ? "namespaced" : "cluster-scoped"}. ${def.description}`,
    "",
    `Short name${def.shortNames.length > 1 ? "s" : ""}: ${def.shortNames.map((n) => `\`${n}\``).join(", ")}${namespaced ? "; category `neon` (`kubectl get neon`)" : ""}.`,
    "",
    "## spec",
    "",
    typeof spec.description === "string" ? spec.description : "",
    "",
    table(spec, "spec"),
    "",
    ...(specRules.length > 0
      ? ["Rules across fields:", "", ...specRules.map((r) => `- ${r.message}`), ""]
      : []),
    ...(status
      ? [
          "## status",
          "",
          typeof status.description === "string" ? status.description : "",
          "",
          table(status, "status"),
          "",
        ]
      : []),
    "## kubectl get columns",
    "",
    "| Column | From | Shown |",
    "| --- | --- | --- |",
    ...def.printerColumns.map(
      (c) => `| ${c.name} | \`${cell(c.jsonPath)}\` | ${c.priority ? "with `-o wide`" : "always"} |`,
    ),
    "",
  ].join("\n");
}

export function referenceFileName(kind: { kind: string }): string {
  return `${kind.kind.toLowerCase()}.md`;
}
