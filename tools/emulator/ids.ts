// Identifiers and secrets in the platform's own forms.
import { createHash, randomBytes, randomInt, randomUUID } from "node:crypto";

const adjectives = [
  "aged",
  "ancient",
  "autumn",
  "billowing",
  "bitter",
  "black",
  "blue",
  "bold",
  "broad",
  "broken",
  "calm",
  "cold",
  "cool",
  "crimson",
  "curly",
  "damp",
  "dark",
  "dawn",
  "delicate",
  "divine",
  "dry",
  "empty",
  "falling",
  "fancy",
  "flat",
  "floral",
  "fragrant",
  "frosty",
  "gentle",
  "green",
  "hidden",
  "holy",
  "icy",
  "jolly",
  "late",
  "lingering",
  "little",
  "lively",
  "long",
  "lucky",
  "misty",
  "morning",
  "muddy",
  "mute",
  "nameless",
  "noisy",
  "odd",
  "old",
  "orange",
  "patient",
  "plain",
  "polished",
  "proud",
  "purple",
  "quiet",
  "rapid",
  "raspy",
  "red",
  "restless",
  "rough",
  "round",
  "royal",
  "shiny",
  "shy",
  "silent",
  "small",
  "snowy",
  "soft",
  "solitary",
  "sparkling",
  "spring",
  "square",
  "steep",
  "still",
  "summer",
  "super",
  "sweet",
  "tight",
  "tiny",
  "twilight",
  "wandering",
  "weathered",
  "white",
  "wild",
  "winter",
  "wispy",
  "withered",
  "yellow",
  "young",
];
const nouns = [
  "art",
  "band",
  "bar",
  "base",
  "bird",
  "block",
  "boat",
  "bonus",
  "bread",
  "breeze",
  "brook",
  "bush",
  "butterfly",
  "cake",
  "cell",
  "cherry",
  "cloud",
  "credit",
  "darkness",
  "dawn",
  "dew",
  "disk",
  "dream",
  "dust",
  "feather",
  "field",
  "fire",
  "firefly",
  "flower",
  "fog",
  "forest",
  "frog",
  "frost",
  "glade",
  "glitter",
  "grass",
  "hall",
  "hat",
  "haze",
  "heart",
  "hill",
  "king",
  "lab",
  "lake",
  "leaf",
  "limit",
  "math",
  "meadow",
  "mode",
  "moon",
  "morning",
  "mountain",
  "mouse",
  "mud",
  "night",
  "paper",
  "pine",
  "poetry",
  "pond",
  "queen",
  "rain",
  "recipe",
  "resonance",
  "rice",
  "river",
  "salad",
  "scene",
  "sea",
  "shadow",
  "shape",
  "silence",
  "sky",
  "smoke",
  "snow",
  "snowflake",
  "sound",
  "star",
  "sun",
  "sunset",
  "surf",
  "term",
  "thunder",
  "tooth",
  "tree",
  "truth",
  "union",
  "unit",
  "violet",
  "voice",
  "water",
  "waterfall",
  "wave",
  "wildflower",
  "wind",
  "wood",
];

function pick(words: readonly string[]): string {
  return words[randomInt(words.length)]!;
}

function hex(length: number): string {
  return randomBytes(Math.ceil(length / 2))
    .toString("hex")
    .slice(0, length);
}

/** `ep-<adjective>-<noun>-<8 hex>`, the form of compute endpoint ids. */
export function newEndpointId(): string {
  return `ep-${pick(adjectives)}-${pick(nouns)}-${hex(8)}`;
}

/** `br-<adjective>-<noun>-<8 hex>`, the form of branch ids. */
export function newBranchId(): string {
  return `br-${pick(adjectives)}-${pick(nouns)}-${hex(8)}`;
}

/** `snap-<adjective>-<noun>-<8 letters and digits>`, the form of the document's snapshot ids. */
export function newSnapshotId(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  let suffix = "";
  for (let i = 0; i < 8; i++) suffix += alphabet[randomInt(alphabet.length)];
  return `snap-${pick(adjectives)}-${pick(nouns)}-${suffix}`;
}

/** `<adjective>-<noun>-<8 digits>`, the form of project ids. */
export function newProjectId(): string {
  return `${pick(adjectives)}-${pick(nouns)}-${String(randomInt(10_000_000, 100_000_000))}`;
}

/** `org-<adjective>-<noun>-<8 digits>`, the platform's organization id form. */
export function newOrganizationId(): string {
  return `org-${newProjectId()}`;
}

export const newOperationId = randomUUID;
export const newRequestId = randomUUID;

const keyAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";

/** A 64-character lowercase alphanumeric API key value. */
export function newApiKeyValue(): string {
  let key = "";
  for (let i = 0; i < 64; i++) key += keyAlphabet[randomInt(keyAlphabet.length)];
  return key;
}

const passwordAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** A role's password in the platform's form: `npg_` and 12 letters and digits. */
export function newRolePassword(): string {
  let password = "npg_";
  for (let i = 0; i < 12; i++) password += passwordAlphabet[randomInt(passwordAlphabet.length)];
  return password;
}

/** Key values are kept only as digests, so neither memory dumps nor state files hold them. */
export function digestApiKey(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}
