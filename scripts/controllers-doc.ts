// The failure table in docs/controllers.md, written by `npm run generate` from the code that decides
// it (src/controllers/managed/refusal.ts: what each kind of refusal does; src/controllers/refusals.ts:
// which answers of the platform are which refusal) and checked by test/deploy/generated.test.ts,
// so the page cannot drift from the code.
import { join } from "node:path";
import { format, resolveConfig } from "prettier";
import { Refusal, outcomes, type RefusalKind, type Retry } from "../src/controllers/managed/refusal.ts";
import { platformRefusals } from "../src/controllers/refusals.ts";

const root = join(import.meta.dirname, "..");
export const controllersDoc = join(root, "docs", "controllers.md");
const begin = "<!-- failures:begin (npm run generate) -->";
const end = "<!-- failures:end -->";

const seconds = (ms: number) => (ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`);

function retryText(retry: Retry): string {
  if (retry === "onChange") return "when the spec (or what it watches) changes; the resync looks again";
  if ("after" in retry) return `after ${seconds(retry.after)}`;
  const { from, max } = retry.backoff;
  return `backoff from ${from === undefined ? "the queue's start" : seconds(from)}, doubling${max === undefined ? "" : ` to ${seconds(max)} and staying there`}`;
}

const meaning: Record<RefusalKind, string> = {
  spec: "the spec as it stands is refused",
  outside:
    "something outside the spec must change (a limit, a name taken, an object deleted elsewhere, a grant, a Secret, another resource's claim)",
  credentials: "the platform refused the API key (every resource using it waits together)",
  transient: "clears by itself (a refusal of the moment, a lost answer, a failed operation)",
  turn: "no failure: its turn comes (a busy project)",
};

/** What each kind of refusal does, then which answer of the platform is which. */
export function failureTables(): string {
  const kinds = Object.keys(outcomes) as RefusalKind[];
  const rows = kinds.map((kind) => {
    const plain = outcomes[kind](new Refusal("", kind, ""));
    const hinted = outcomes[kind](new Refusal("", kind, "", { retryAfterMs: 7_000 }));
    const retry =
      retryText(hinted.retry) === retryText(plain.retry)
        ? retryText(plain.retry)
        : `the platform's hint (Retry-After, the gate's turn), else ${retryText(plain.retry)}`;
    const shows = plain.waiting ? "Reconciling, no failure" : plain.stalled ? "Stalled" : "Synced=False";
    return `| \`${kind}\` | ${meaning[kind]} | ${shows} | ${retry} |`;
  });
  const answers = platformRefusals.map(
    (r) => `| ${r.answer} | \`${r.error.name}\` | \`${r.reason}\` | \`${r.kind}\` |`,
  );
  return [
    "| Kind of refusal | Means | Shows | Tried again |",
    "| --- | --- | --- | --- |",
    ...rows,
    "",
    "| The platform answered | Client error | Reason | Kind |",
    "| --- | --- | --- | --- |",
    ...answers,
  ].join("\n");
}

/** docs/controllers.md with the current tables between their markers, formatted as the formatter would. */
export async function withFailureTables(doc: string): Promise<string> {
  const from = doc.indexOf(begin);
  const to = doc.indexOf(end);
  if (from < 0 || to < from) throw new Error(`docs/controllers.md has no ${begin} … ${end} section`);
  const next = `${doc.slice(0, from + begin.length)}\n\n${failureTables()}\n\n${doc.slice(to)}`;
  const options = await resolveConfig(controllersDoc);
  return format(next, { ...options, filepath: controllersDoc });
}
