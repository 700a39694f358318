// A Kubernetes label selector in its string form (`app=web,tier!=db,env in (a,b),!legacy`), read
// once and matched against an object's labels, for a controller that acts on some objects of the
// kinds it caches (shard.ts). The grammar is the API server's (k8s.io/apimachinery labels.Parse):
// equality (`=`, `==`, `!=`), sets (`in`, `notin`), existence (`key`, `!key`); every requirement
// must hold. The API server is not asked: the selector is matched on cached objects.

/** Labels of an object; absent is empty. */
export type Labels = Readonly<Record<string, string>> | undefined;

/** A selector read from its string form. */
export interface LabelSelector {
  /** As given, for logs and metrics. */
  readonly text: string;
  matches(labels: Labels): boolean;
}

// A qualified name with an optional DNS-subdomain prefix, and a value (possibly empty).
const keyPattern =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const valuePattern = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

type Requirement = (labels: Readonly<Record<string, string>>) => boolean;

/** Splits at commas that are not inside a set's parentheses. */
function requirements(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "," && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
    if (depth < 0 || depth > 1) throw new Error(`unbalanced parentheses in "${text}"`);
  }
  if (depth !== 0) throw new Error(`unbalanced parentheses in "${text}"`);
  parts.push(text.slice(start));
  return parts.map((p) => p.trim());
}

function checkKey(key: string, part: string): string {
  if (key.length > 316 || !keyPattern.test(key)) {
    throw new Error(`"${part}": "${key}" is not a label key (an optional DNS prefix and "/", then a name)`);
  }
  return key;
}

function checkValue(value: string, part: string): string {
  if (value.length > 63 || !valuePattern.test(value)) {
    throw new Error(
      `"${part}": "${value}" is not a label value (63 characters at most, alphanumeric at both ends)`,
    );
  }
  return value;
}

function requirement(part: string): Requirement {
  if (part === "") throw new Error("an empty requirement (two commas, or a comma at an end)");
  const set = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(part);
  if (set) {
    const key = checkKey(set[1] ?? "", part);
    const values = new Set((set[3] ?? "").split(",").map((v) => checkValue(v.trim(), part)));
    return set[2] === "in"
      ? (labels) => labels[key] !== undefined && values.has(labels[key])
      : (labels) => labels[key] === undefined || !values.has(labels[key]);
  }
  const equality = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(part);
  if (equality) {
    const key = checkKey(equality[1] ?? "", part);
    const value = checkValue(equality[3] ?? "", part);
    return equality[2] === "!=" ? (labels) => labels[key] !== value : (labels) => labels[key] === value;
  }
  if (part.startsWith("!")) {
    const key = checkKey(part.slice(1).trim(), part);
    return (labels) => labels[key] === undefined;
  }
  const key = checkKey(part, part);
  return (labels) => labels[key] !== undefined;
}

/** Reads a selector; an error names the requirement it could not read and why. */
export function parseLabelSelector(text: string): LabelSelector {
  // Empty: every object, as the API server reads it.
  const all = text.trim() === "" ? [] : requirements(text.trim()).map(requirement);
  return {
    text,
    matches: (labels) => all.every((r) => r(labels ?? {})),
  };
}
