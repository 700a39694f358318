// Validates emulator responses against the platform's official OpenAPI
// document, as shipped in @neondatabase/api-client.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Ajv, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import { parse } from "yaml";

const require = createRequire(import.meta.url);
const documentPath = require.resolve("@neondatabase/api-client/public-v2-for-users.gen.yaml");

interface OpenApiDocument {
  paths: Record<string, Record<string, { responses: Record<string, { $ref?: string }> }>>;
}

const document = parse(readFileSync(documentPath, "utf8")) as OpenApiDocument;
// OpenAPI 3.0 schemas carry keywords JSON Schema does not know (example, x-*, deprecated): not strict.
const ajv = new Ajv({ strict: false, allErrors: true });
const addFormats = addFormatsModule as unknown as (a: Ajv) => Ajv;
addFormats(ajv);
ajv.addSchema(document, "openapi");
const compiled = new Map<string, ValidateFunction>();

/**
 * The errors of `body` as the response of `method path` with `status`, per the
 * document (the status's own response, else `default`); [] when it conforms.
 */
export function responseErrors(method: string, path: string, status: number, body: unknown): string[] {
  const operation = document.paths[path]?.[method.toLowerCase()];
  if (!operation) throw new Error(`the OpenAPI document has no ${method} ${path}`);
  const declared = operation.responses[String(status)] ? String(status) : "default";
  const key = `${method} ${path} ${declared}`;
  let validate = compiled.get(key);
  if (!validate) {
    const response = operation.responses[declared];
    if (!response) throw new Error(`${key}: no such response`);
    const shared = response.$ref?.split("/").at(-1);
    const pointer =
      shared === undefined
        ? `#/paths/${escape(path)}/${method.toLowerCase()}/responses/${declared}/content/application~1json/schema`
        : `#/components/responses/${shared}/content/application~1json/schema`;
    validate = ajv.getSchema(`openapi${pointer}`);
    if (!validate) throw new Error(`${key}: no JSON schema`);
    compiled.set(key, validate);
  }
  if (validate(body)) return [];
  return (validate.errors ?? []).map(
    (e) => `${e.instancePath || "/"} ${e.message ?? ""} ${JSON.stringify(e.params)}`,
  );
}

const escape = (path: string): string => path.replaceAll("~", "~0").replaceAll("/", "~1");
