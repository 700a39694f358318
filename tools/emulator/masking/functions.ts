// The masking functions the emulator knows: PostgreSQL Anonymizer's (`anon.*`, v1 faking and v2
// dummy functions, randomization, partial scrambling, noise, hashing, pseudonymization) and the
// few `pg_catalog` ones rules combine them with. A rule naming any other function is refused, as
// the platform refuses a rule its extension cannot run. Each keeps the kind of data it replaces:
// an e-mail stays an e-mail, a date a date.
import { createHash } from "node:crypto";
import {
  cities,
  companySuffixes,
  companyWords,
  countries,
  firstNames,
  freeEmailDomains,
  lastNames,
  safeEmailDomains,
  streetNames,
  words,
} from "./fake-data.ts";
import type { Value } from "./expression.ts";

export interface MaskingContext {
  /** Uniform in [0, 1), from the emulator's seed: a run repeats from it. */
  random: () => number;
}

export interface MaskingFunction {
  /** How many arguments it takes: [least, most]. */
  arity: readonly [number, number];
  apply(args: readonly Value[], context: MaskingContext): Value;
}

const pick = <T>(list: readonly T[], random: () => number): T => list[Math.floor(random() * list.length)]!;
const digits = (count: number, random: () => number): string =>
  Array.from({ length: count }, () => Math.floor(random() * 10)).join("");
const between = (low: number, high: number, random: () => number): number =>
  low + Math.floor(random() * (high - low + 1));
const text = (value: Value): string => (value === null ? "" : String(value));
const number = (value: Value, name: string): number => {
  const n = typeof value === "number" ? value : Number(value);
  if (value === null || Number.isNaN(n)) throw new Error(`${name}: ${String(value)} is not a number`);
  return n;
};

const firstName = ({ random }: MaskingContext) => pick(firstNames, random);
const lastName = ({ random }: MaskingContext) => pick(lastNames, random);
const email = (domains: readonly string[]) => (context: MaskingContext) =>
  `${firstName(context).toLowerCase()}.${lastName(context).toLowerCase()}${digits(3, context.random)}@${pick(domains, context.random)}`;
const company = ({ random }: MaskingContext) =>
  `${pick(companyWords, random)} ${pick(companySuffixes, random)}`;
const phone = ({ random }: MaskingContext) =>
  `+1-${digits(3, random)}-${digits(3, random)}-${digits(4, random)}`;
const uuid = ({ random }: MaskingContext) => {
  const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16));
  hex[12] = "4";
  hex[16] = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  const h = hex.join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};
const isoDate = (ms: number): string => new Date(ms).toISOString();

/** A value picked from `list` by a seed, the same every time (pseudonymization). */
const pseudo = <T>(list: readonly T[], seed: Value, salt: Value): T => {
  const digest = createHash("sha256")
    .update(`${text(salt)}${text(seed)}`)
    .digest();
  return list[digest.readUInt32BE(0) % list.length]!;
};

/** A function of no argument: each call draws a new value. */
const generator = (make: (context: MaskingContext) => Value): MaskingFunction => ({
  arity: [0, 0],
  apply: (_args, context) => make(context),
});

/** A random integer from the first argument to the second, both included. */
const integerBetween = (name: string): MaskingFunction => ({
  arity: [2, 2],
  apply: ([low, high], { random }) => between(number(low ?? null, name), number(high ?? null, name), random),
});

/** `'2 days'`, `'1 hour'`, `'3 months'` as milliseconds (months and years approximate). */
function intervalMs(value: Value): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(second|minute|hour|day|week|month|year)s?\s*$/i.exec(text(value));
  if (!match?.[1] || !match[2]) throw new Error(`${text(value)} is not an interval such as '2 days'`);
  const unit = {
    second: 1,
    minute: 60,
    hour: 3600,
    day: 86_400,
    week: 604_800,
    month: 2_592_000,
    year: 31_536_000,
  }[match[2].toLowerCase() as "second"];
  return Number(match[1]) * unit * 1000;
}

export const maskingFunctions: ReadonlyMap<string, MaskingFunction> = new Map<string, MaskingFunction>([
  // Faking (v1) and dummy data (v2): a plausible value of the column's kind.
  ["anon.fake_first_name", generator(firstName)],
  ["anon.fake_last_name", generator(lastName)],
  ["anon.fake_email", generator(email(freeEmailDomains))],
  ["anon.fake_city", generator(({ random }) => pick(cities, random))],
  ["anon.fake_country", generator(({ random }) => pick(countries, random)[0])],
  ["anon.fake_company", generator(company)],
  ["anon.fake_address", generator(({ random }) => `${between(1, 250, random)} ${pick(streetNames, random)}`)],
  ["anon.fake_postcode", generator(({ random }) => digits(5, random))],
  ["anon.dummy_first_name", generator(firstName)],
  ["anon.dummy_last_name", generator(lastName)],
  ["anon.dummy_name", generator((c) => `${firstName(c)} ${lastName(c)}`)],
  ["anon.dummy_free_email", generator(email(freeEmailDomains))],
  ["anon.dummy_safe_email", generator(email(safeEmailDomains))],
  ["anon.dummy_username", generator((c) => `${firstName(c).toLowerCase()}_${digits(4, c.random)}`)],
  ["anon.dummy_city_name", generator(({ random }) => pick(cities, random))],
  ["anon.dummy_country_name", generator(({ random }) => pick(countries, random)[0])],
  ["anon.dummy_country_code", generator(({ random }) => pick(countries, random)[1])],
  ["anon.dummy_street_name", generator(({ random }) => pick(streetNames, random))],
  ["anon.dummy_zip_code", generator(({ random }) => digits(5, random))],
  ["anon.dummy_post_code", generator(({ random }) => digits(5, random))],
  ["anon.dummy_company_name", generator(company)],
  ["anon.dummy_phone_number", generator(phone)],
  ["anon.dummy_cell_number", generator(phone)],
  ["anon.dummy_uuidv4", generator(uuid)],
  [
    "anon.dummy_ipv4",
    generator(({ random }) => Array.from({ length: 4 }, () => between(1, 254, random)).join(".")),
  ],
  ["anon.dummy_word", generator(({ random }) => pick(words, random))],
  // Randomization.
  [
    "anon.random_string",
    {
      arity: [1, 1],
      apply: ([length], { random }) => {
        const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
        return Array.from({ length: number(length ?? null, "random_string") }, () =>
          pick([...alphabet], random),
        ).join("");
      },
    },
  ],
  ["anon.random_int_between", integerBetween("random_int_between")],
  ["anon.random_bigint_between", integerBetween("random_bigint_between")],
  [
    "anon.random_date",
    generator(({ random }) =>
      isoDate(Date.UTC(1900, 0, 1) + random() * (Date.UTC(2030, 0, 1) - Date.UTC(1900, 0, 1))),
    ),
  ],
  [
    "anon.random_date_between",
    {
      arity: [2, 2],
      apply: ([from, to], { random }) => {
        const low = Date.parse(text(from ?? null));
        const high = Date.parse(text(to ?? null));
        if (Number.isNaN(low) || Number.isNaN(high)) throw new Error("random_date_between: needs two dates");
        return isoDate(low + random() * (high - low));
      },
    },
  ],
  ["anon.random_zip", generator(({ random }) => digits(5, random))],
  [
    "anon.random_phone",
    {
      arity: [0, 1],
      apply: ([prefix], { random }) => `${prefix === undefined ? "0" : text(prefix)}${digits(9, random)}`,
    },
  ],
  // Partial scrambling: the format stays, the identifying middle goes.
  [
    "anon.partial",
    {
      arity: [4, 4],
      apply: ([value, prefix, padding, suffix]) => {
        if (value === null || value === undefined) return null;
        const s = text(value);
        const head = number(prefix ?? null, "partial");
        const tail = number(suffix ?? null, "partial");
        return `${s.slice(0, head)}${text(padding ?? null)}${tail > 0 ? s.slice(Math.max(head, s.length - tail)) : ""}`;
      },
    },
  ],
  [
    "anon.partial_email",
    {
      arity: [1, 1],
      apply: ([value]) => {
        if (value === null || value === undefined) return null;
        const [local = "", domain = ""] = text(value).split("@");
        const tld = domain.includes(".") ? domain.slice(domain.lastIndexOf(".") + 1) : domain;
        return `${local.slice(0, 2)}******@${domain.slice(0, 2)}******.${tld}`;
      },
    },
  ],
  // Noise: numbers and dates shifted by a random amount.
  [
    "anon.noise",
    {
      arity: [2, 2],
      apply: ([value, ratio], { random }) => {
        if (value === null || value === undefined) return null;
        const n = number(value, "noise");
        return n * (1 + (2 * random() - 1) * number(ratio ?? null, "noise"));
      },
    },
  ],
  [
    "anon.dnoise",
    {
      arity: [2, 2],
      apply: ([value, interval], { random }) => {
        if (value === null || value === undefined) return null;
        const at = Date.parse(text(value));
        if (Number.isNaN(at)) throw new Error(`dnoise: ${text(value)} is not a date`);
        return isoDate(at + (2 * random() - 1) * intervalMs(interval ?? null));
      },
    },
  ],
  // Hashing and pseudonymization: the same input always gives the same output.
  [
    "anon.hash",
    {
      arity: [1, 1],
      apply: ([value]) =>
        value === null || value === undefined ? null : createHash("sha512").update(text(value)).digest("hex"),
    },
  ],
  [
    "anon.digest",
    {
      arity: [3, 3],
      apply: ([value, salt, algorithm]) => {
        if (value === null || value === undefined) return null;
        const name = text(algorithm ?? null).toLowerCase();
        if (!["md5", "sha1", "sha224", "sha256", "sha384", "sha512"].includes(name)) {
          throw new Error(`digest: unknown algorithm ${name}`);
        }
        return createHash(name)
          .update(`${text(value)}${text(salt ?? null)}`)
          .digest("hex");
      },
    },
  ],
  [
    "anon.pseudo_first_name",
    { arity: [1, 2], apply: ([seed, salt]) => pseudo(firstNames, seed ?? null, salt ?? null) },
  ],
  [
    "anon.pseudo_last_name",
    { arity: [1, 2], apply: ([seed, salt]) => pseudo(lastNames, seed ?? null, salt ?? null) },
  ],
  [
    "anon.pseudo_city",
    { arity: [1, 2], apply: ([seed, salt]) => pseudo(cities, seed ?? null, salt ?? null) },
  ],
  [
    "anon.pseudo_country",
    { arity: [1, 2], apply: ([seed, salt]) => pseudo(countries, seed ?? null, salt ?? null)[0] },
  ],
  [
    "anon.pseudo_company",
    { arity: [1, 2], apply: ([seed, salt]) => `${pseudo(companyWords, seed ?? null, salt ?? null)} Ltd` },
  ],
  [
    "anon.pseudo_email",
    {
      arity: [1, 2],
      apply: ([seed, salt]) => {
        const digest = createHash("sha256")
          .update(`${text(salt ?? null)}${text(seed ?? null)}`)
          .digest("hex");
        return `${digest.slice(0, 12)}@${pseudo(safeEmailDomains, seed ?? null, salt ?? null)}`;
      },
    },
  ],
  // pg_catalog functions rules combine with the above.
  ["concat", { arity: [1, 100], apply: (args) => args.map(text).join("") }],
  [
    "md5",
    {
      arity: [1, 1],
      apply: ([v]) =>
        v === null || v === undefined ? null : createHash("md5").update(text(v)).digest("hex"),
    },
  ],
  [
    "lower",
    { arity: [1, 1], apply: ([v]) => (v === null || v === undefined ? null : text(v).toLowerCase()) },
  ],
  [
    "upper",
    { arity: [1, 1], apply: ([v]) => (v === null || v === undefined ? null : text(v).toUpperCase()) },
  ],
]);

/** The function a call names: `pg_catalog.concat` and `concat` are one. */
export function maskingFunction(name: string): MaskingFunction | undefined {
  return maskingFunctions.get(name.startsWith("pg_catalog.") ? name.slice("pg_catalog.".length) : name);
}
