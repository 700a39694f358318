// The SQL expressions masking rules hold (`anon.partial(phone, 2, 'XXX-XXXX', 2)`,
// `pg_catalog.concat(anon.dummy_uuidv4(), '@example.com')`, `'CONFIDENTIAL'`): parsed into a small
// tree the emulator evaluates in TypeScript for each row, as PostgreSQL Anonymizer evaluates them
// in Postgres. Only what masking rules use: literals, column references, function calls, `||` and
// `::` casts.

export type Value = string | number | boolean | null;

export type Expression =
  | { kind: "literal"; value: Value }
  | { kind: "column"; name: string }
  | { kind: "call"; name: string; args: Expression[] }
  | { kind: "concat"; parts: Expression[] }
  | { kind: "cast"; value: Expression; type: string };

/** A token of the expression language. */
type Token =
  | { kind: "word"; text: string }
  | { kind: "quoted"; text: string }
  | { kind: "string"; text: string }
  | { kind: "number"; value: number }
  | { kind: "symbol"; text: string };

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === "'") {
      let text = "";
      for (i++; ; i++) {
        if (i >= source.length) throw new Error("a string literal is not closed");
        if (source[i] === "'" && source[i + 1] === "'") {
          text += "'";
          i++;
        } else if (source[i] === "'") break;
        else text += source[i];
      }
      i++;
      tokens.push({ kind: "string", text });
    } else if (c === '"') {
      const end = source.indexOf('"', i + 1);
      if (end < 0) throw new Error("a quoted name is not closed");
      tokens.push({ kind: "quoted", text: source.slice(i + 1, end) });
      i = end + 1;
    } else if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(source[i + 1] ?? ""))) {
      const match = /^[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?/.exec(source.slice(i))!;
      tokens.push({ kind: "number", value: Number(match[0]) });
      i += match[0].length;
    } else if (/[A-Za-z_]/.test(c)) {
      const match = /^[A-Za-z_][A-Za-z0-9_$]*/.exec(source.slice(i))!;
      tokens.push({ kind: "word", text: match[0] });
      i += match[0].length;
    } else if (source.startsWith("||", i) || source.startsWith("::", i)) {
      tokens.push({ kind: "symbol", text: source.slice(i, i + 2) });
      i += 2;
    } else if ("(),.-[]".includes(c)) {
      tokens.push({ kind: "symbol", text: c });
      i++;
    } else {
      throw new Error(`unexpected character ${JSON.stringify(c)}`);
    }
  }
  return tokens;
}

/** Parses a masking expression; throws an Error saying what is wrong. */
export function parseExpression(source: string): Expression {
  const tokens = tokenize(source);
  let at = 0;
  const peek = (): Token | undefined => tokens[at];
  const isSymbol = (text: string): boolean => {
    const t = peek();
    return t?.kind === "symbol" && t.text === text;
  };
  const expect = (text: string): void => {
    if (!isSymbol(text)) throw new Error(`expected "${text}"`);
    at++;
  };

  const typeName = (): string => {
    const words: string[] = [];
    for (let t = peek(); t?.kind === "word" || t?.kind === "quoted"; t = peek()) {
      words.push(t.text.toLowerCase());
      at++;
    }
    if (words.length === 0) throw new Error("expected a type after ::");
    if (isSymbol("(")) {
      at++;
      while (!isSymbol(")")) {
        if (peek() === undefined) throw new Error('expected ")"');
        at++;
      }
      at++;
    }
    while (isSymbol("[")) {
      expect("[");
      expect("]");
      words.push("[]");
    }
    return words.join(" ");
  };

  const primary = (): Expression => {
    const t = peek();
    if (t === undefined) throw new Error("the expression ends too early");
    at++;
    if (t.kind === "string") return { kind: "literal", value: t.text };
    if (t.kind === "number") return { kind: "literal", value: t.value };
    if (t.kind === "symbol" && t.text === "-") {
      const n = peek();
      if (n?.kind !== "number") throw new Error('expected a number after "-"');
      at++;
      return { kind: "literal", value: -n.value };
    }
    if (t.kind === "symbol" && t.text === "(") {
      const inner = expression();
      expect(")");
      return inner;
    }
    if (t.kind === "quoted") return { kind: "column", name: t.text };
    if (t.kind !== "word") throw new Error(`unexpected "${t.text}"`);
    const word = t.text.toLowerCase();
    if (word === "null") return { kind: "literal", value: null };
    if (word === "true" || word === "false") return { kind: "literal", value: word === "true" };
    let name = word;
    if (isSymbol(".")) {
      at++;
      const member = peek();
      if (member?.kind !== "word" && member?.kind !== "quoted")
        throw new Error(`expected a name after "${t.text}."`);
      at++;
      name = `${word}.${member.text.toLowerCase()}`;
    }
    if (!isSymbol("(")) {
      if (name.includes(".")) throw new Error(`a qualified column ${name} is not allowed`);
      // Postgres folds an unquoted name to lower case.
      return { kind: "column", name: word };
    }
    at++;
    const args: Expression[] = [];
    while (!isSymbol(")")) {
      args.push(expression());
      if (isSymbol(",")) at++;
      else if (!isSymbol(")")) throw new Error(`expected "," or ")" in ${name}(...)`);
    }
    at++;
    return { kind: "call", name, args };
  };

  const cast = (): Expression => {
    let value = primary();
    while (isSymbol("::")) {
      at++;
      value = { kind: "cast", value, type: typeName() };
    }
    return value;
  };

  function expression(): Expression {
    const parts = [cast()];
    while (isSymbol("||")) {
      at++;
      parts.push(cast());
    }
    return parts.length === 1 ? parts[0]! : { kind: "concat", parts };
  }

  const tree = expression();
  if (at < tokens.length) throw new Error("unexpected text after the expression");
  return tree;
}

/** Every node of the tree, depth first. */
export function* nodes(expression: Expression): Generator<Expression> {
  yield expression;
  if (expression.kind === "call") for (const arg of expression.args) yield* nodes(arg);
  else if (expression.kind === "concat") for (const part of expression.parts) yield* nodes(part);
  else if (expression.kind === "cast") yield* nodes(expression.value);
}
