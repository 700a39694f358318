// A project's list at rest: held while a reader may still take it, forgotten once it is older than
// any reader has accepted (an adopted project's lists are read once, then never again).
import { describe, expect, it } from "vitest";
import { Account } from "./account.ts";
import type { Branch } from "./branch-schemas.ts";
import { ListSnapshot } from "./snapshot.ts";

type Item = { id: string; currentState: string };

function clock() {
  let t = 0;
  return { now: () => t, pass: (ms: number) => (t += ms) };
}

describe("a project's list at rest", () => {
  it("is stale once older than the oldest answer any reader accepted, and not while being read", async () => {
    const { now, pass } = clock();
    const list = new ListSnapshot<Item>({ windowMs: 1_000, now });
    expect(list.stale()).toBe(true);
    let answer: (items: Item[]) => void = () => undefined;
    const reading = list.get(() => new Promise((done) => (answer = done)), "key", 600_000);
    pass(700_000);
    expect(list.stale(), "a list still being read is kept").toBe(false);
    answer([{ id: "br-main", currentState: "ready" }]);
    await reading;
    expect(list.stale()).toBe(true);

    let lists = 0;
    const lister = () => {
      lists++;
      return Promise.resolve([{ id: "br-main", currentState: "ready" }]);
    };
    await list.get(lister, "key", 600_000);
    pass(599_000);
    expect(list.stale(), "a reader accepting ten minutes may still take it").toBe(false);
    await list.get(lister, "key", 600_000);
    expect(lists).toBe(1);
    pass(1_000);
    expect(list.stale()).toBe(true);
  });

  it("is forgotten by the account's sweep; the next reader lists again, as it would have", async () => {
    const account = new Account();
    const project = account.project("tenant-1");
    let lists = 0;
    const branches = (): Promise<Branch[]> => {
      lists++;
      return Promise.resolve([{ id: "br-main", currentState: "ready", default: true } as Branch]);
    };
    await project.branches.get(branches, "key", 50);
    account.forgetStaleLists();
    await project.branches.get(branches, "key", 50);
    expect(lists, "a list a reader may take is kept").toBe(1);
    await new Promise((done) => setTimeout(done, 60));
    account.forgetStaleLists();
    await project.branches.get(branches, "key", 50);
    expect(lists).toBe(2);
  });
});
