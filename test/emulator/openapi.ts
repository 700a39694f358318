// Validates emulator responses against the platform's official OpenAPI
// document, as shipped in @neondatabase/api-client.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Ajv, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import { expect } from "vitest";
import { parse } from "yaml";
import type { CallOptions, Harness } from "./harness.ts";

const require = createRequire(import.meta.url);
const documentPath = require.resolve("@neondatabase/api-client/public-v2-for-users.gen.yaml");

interface OpenApiResponse {
  $ref?: string;
  content?: unknown;
}

/** A schema of the document, as far as tests read its fields. */
export interface SchemaNode {
  required?: string[];
  properties?: Record<string, SchemaNode & { deprecated?: boolean }>;
}

interface OpenApiDocument {
  paths: Record<string, Record<string, { responses: Record<string, OpenApiResponse> }>>;
  components: { responses: Record<string, OpenApiResponse>; schemas: Record<string, SchemaNode> };
}

const text = readFileSync(documentPath, "utf8");
const document = parse(text) as OpenApiDocument;

/** The document's schemas (`components.schemas`), by name. */
export const documentSchemas = document.components.schemas;

/**
 * The document as it will be once deprecated fields are gone: every property marked
 * `deprecated` is dropped from its object's `required` list (it may still appear).
 */
function withoutRequiredDeprecated(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutRequiredDeprecated);
  if (node === null || typeof node !== "object") return node;
  const object = Object.fromEntries(
    Object.entries(node).map(([key, value]) => [key, withoutRequiredDeprecated(value)]),
  );
  const properties = object["properties"] as Record<string, { deprecated?: boolean }> | undefined;
  if (Array.isArray(object["required"]) && properties) {
    object["required"] = (object["required"] as string[]).filter(
      (name) => properties[name]?.deprecated !== true,
    );
  }
  return object;
}

// OpenAPI 3.0 schemas carry keywords JSON Schema does not know (example, x-*, deprecated): not strict.
function validatorFor(doc: unknown): Ajv {
  const ajv = new Ajv({ strict: false, allErrors: true });
  (addFormatsModule as unknown as (a: Ajv) => Ajv)(ajv);
  ajv.addSchema(doc as object, "openapi");
  return ajv;
}

const validators = {
  strict: validatorFor(document),
  deprecatedMayBeMissing: validatorFor(withoutRequiredDeprecated(parse(text))),
};
const compiled = new Map<string, ValidateFunction>();

export interface ResponseCheckOptions {
  /** Accept responses without the fields the document marks deprecated (the emulator's `dropDeprecatedFields`). */
  deprecatedMayBeMissing?: boolean;
}

/**
 * The errors of `body` as the response of `method path` with `status`, per the
 * document (the status's own response, else `default`); [] when it conforms.
 * A response the document declares without content must have no body.
 */
export function responseErrors(
  method: string,
  path: string,
  status: number,
  body: unknown,
  options: ResponseCheckOptions = {},
): string[] {
  const operation = document.paths[path]?.[method.toLowerCase()];
  if (!operation) throw new Error(`the OpenAPI document has no ${method} ${path}`);
  const declared = operation.responses[String(status)] ? String(status) : "default";
  const response = operation.responses[declared];
  if (!response) throw new Error(`${method} ${path} ${declared}: no such response`);
  const shared = response.$ref?.split("/").at(-1);
  const content = shared === undefined ? response.content : document.components.responses[shared]?.content;
  if (content === undefined) {
    return body === undefined ? [] : [`${method} ${path} ${declared} declares no body, got one`];
  }
  const mode = options.deprecatedMayBeMissing ? "deprecatedMayBeMissing" : "strict";
  const key = `${mode} ${method} ${path} ${declared}`;
  let validate = compiled.get(key);
  if (!validate) {
    const pointer =
      shared === undefined
        ? `#/paths/${escape(path)}/${method.toLowerCase()}/responses/${declared}/content/application~1json/schema`
        : `#/components/responses/${shared}/content/application~1json/schema`;
    validate = validators[mode].getSchema(`openapi${pointer}`);
    if (!validate) throw new Error(`${key}: no JSON schema`);
    compiled.set(key, validate);
  }
  if (validate(body)) return [];
  return (validate.errors ?? []).map(
    (e) => `${e.instancePath || "/"} ${e.message ?? ""} ${JSON.stringify(e.params)}`,
  );
}

const escape = (path: string): string => path.replaceAll("~", "~0").replaceAll("/", "~1");

/**
 * Calls a route (with the bootstrap key, or `options.key`) and expects its response to conform to
 * the document's schema for that route and status.
 */
export async function conforming(
  h: Harness,
  method: string,
  template: string,
  path: string,
  body?: unknown,
  options: CallOptions = {},
): ReturnType<Harness["api"]> {
  const res = await h.api(method, path, body, options);
  expect(responseErrors(method, template, res.status, res.body), `${method} ${path} → ${res.status}`).toEqual(
    [],
  );
  return res;
}
