// Masking rules as the platform checks them before it keeps them: each names a database, schema,
// table and column that exist, and masks it with a function the extension has
// (`masking_function`) or a literal (`masking_value`), never both. A refusal is a 400 naming the
// rule and the column, so whoever wrote it sees which one to fix.
import { badRequest } from "../errors.ts";
import type { MaskingRule } from "../model.ts";
import type { ColumnInfo } from "../world.ts";
import { nodes, parseExpression, type Expression, type Value } from "./expression.ts";
import { maskingFunction, type MaskingContext } from "./functions.ts";

/** A rule ready to run: its expression parsed, its functions known. */
export interface CompiledRule {
  rule: MaskingRule;
  /** Its place in the request, for refusals. */
  index: number;
  expression: Expression;
}

const columnOf = (rule: MaskingRule): string => `${rule.schema_name}.${rule.table_name}.${rule.column_name}`;

/** Checks what a rule says by itself (400 otherwise) and parses it. */
export function compileRules(rules: readonly MaskingRule[]): CompiledRule[] {
  const seen = new Set<string>();
  return rules.map((rule, index) => {
    const at = `masking_rules[${index}]`;
    const column = `${rule.database_name}.${columnOf(rule)}`;
    if (seen.has(column)) throw badRequest(`${at}: column ${column} has another rule already`);
    seen.add(column);
    const hasFunction = rule.masking_function !== undefined;
    if (hasFunction === (rule.masking_value !== undefined)) {
      throw badRequest(`${at}: give masking_function or masking_value (one of them) for column ${column}`);
    }
    const field = hasFunction ? "masking_function" : "masking_value";
    let expression: Expression;
    try {
      expression = parseExpression(rule.masking_function ?? rule.masking_value ?? "");
    } catch (err) {
      throw badRequest(`${at}.${field}: ${(err as Error).message} (column ${column})`);
    }
    for (const node of nodes(expression)) {
      if (!hasFunction && (node.kind === "call" || node.kind === "column")) {
        throw badRequest(
          `${at}.masking_value: must be a literal such as 'REDACTED', 0 or NULL (column ${column})`,
        );
      }
      if (node.kind !== "call") continue;
      const known = maskingFunction(node.name);
      if (!known)
        throw badRequest(
          `${at}.masking_function: unknown masking function ${node.name}() (column ${column})`,
        );
      const [least, most] = known.arity;
      if (node.args.length < least || node.args.length > most) {
        const expected = least === most ? `${least}` : `${least} to ${most}`;
        throw badRequest(
          `${at}.masking_function: ${node.name}() takes ${expected} arguments, got ${node.args.length} (column ${column})`,
        );
      }
    }
    return { rule, index, expression };
  });
}

/**
 * Checks that each rule's table and column exist in its database (`columns`, by database name),
 * that the column is not part of a foreign key (the platform masks the key it references
 * instead), and that the columns its expression reads exist too.
 */
export function checkColumns(
  rules: readonly CompiledRule[],
  columns: ReadonlyMap<string, readonly ColumnInfo[]>,
): void {
  for (const { rule, index, expression } of rules) {
    const at = `masking_rules[${index}]`;
    const all = columns.get(rule.database_name) ?? [];
    const inSchema = all.filter((c) => c.schema === rule.schema_name);
    if (inSchema.length === 0) {
      throw badRequest(
        `${at}.schema_name: schema ${rule.schema_name} has no table in database ${rule.database_name}`,
      );
    }
    const inTable = inSchema.filter((c) => c.table === rule.table_name);
    if (inTable.length === 0) {
      throw badRequest(
        `${at}.table_name: table ${rule.schema_name}.${rule.table_name} does not exist in database ${rule.database_name}`,
      );
    }
    const column = inTable.find((c) => c.column === rule.column_name);
    if (!column) {
      throw badRequest(
        `${at}.column_name: column ${columnOf(rule)} does not exist in database ${rule.database_name}`,
      );
    }
    if (column.foreignKey) {
      throw badRequest(
        `${at}.column_name: column ${columnOf(rule)} is part of a foreign key and cannot be masked directly; mask the key it references`,
      );
    }
    for (const node of nodes(expression)) {
      if (node.kind === "column" && !inTable.some((c) => c.column === node.name)) {
        throw badRequest(
          `${at}.masking_function: column ${node.name} does not exist in table ${rule.schema_name}.${rule.table_name}`,
        );
      }
    }
  }
}

const numeric =
  /^(smallint|integer|int|int2|int4|int8|bigint|numeric|decimal|real|double precision|float\d?)\b/;

/** The rule's value for one row (`row` holds the table's columns as text). */
export function evaluate(
  expression: Expression,
  row: Readonly<Record<string, string | null>>,
  context: MaskingContext,
): Value {
  switch (expression.kind) {
    case "literal":
      return expression.value;
    case "column":
      return row[expression.name] ?? null;
    case "call":
      return maskingFunction(expression.name)!.apply(
        expression.args.map((arg) => evaluate(arg, row, context)),
        context,
      );
    case "concat": {
      // `||` is null when any part is, as in SQL.
      const parts = expression.parts.map((part) => evaluate(part, row, context));
      return parts.some((p) => p === null) ? null : parts.map(String).join("");
    }
    case "cast": {
      const value = evaluate(expression.value, row, context);
      if (value === null) return null;
      if (numeric.test(expression.type)) return Number(value);
      if (expression.type === "date") return new Date(String(value)).toISOString().slice(0, 10);
      return String(value);
    }
  }
}
