// `GET /projects/{id}/branches` in pages, as the OpenAPI document describes it: `limit`,
// `cursor` (opaque: `pagination.next` of the previous page), `sort_by` (name, created_at,
// updated_at; default updated_at) and `sort_order` (default desc), `search` on name or id. Without
// `limit` a page is small (10), so a client that reads only the first page misses branches; a
// page may hold fewer than `limit` (`maxPage`), so a client follows `next` until it is absent.
import { badRequest } from "./errors.ts";
import type { BranchRecord } from "./model.ts";

export interface BranchListQuery {
  limit: number;
  cursor?: string | undefined;
  sort_by: "name" | "created_at" | "updated_at";
  sort_order: "asc" | "desc";
  search?: string | undefined;
}

export interface BranchPage {
  branches: BranchRecord[];
  pagination: { next?: string; sort_by: string; sort_order: string };
}

type Key = [string | number, string];

function sortKey(b: BranchRecord, by: BranchListQuery["sort_by"]): Key {
  const value = by === "name" ? b.name : by === "created_at" ? b.createdAt : (b.updatedAt ?? b.createdAt);
  return [value, b.id];
}

function compare(a: Key, b: Key): number {
  for (let i = 0; i < 2; i++) {
    const [x, y] = [a[i], b[i]];
    if (x === undefined || y === undefined || x === y) continue;
    return x < y ? -1 : 1;
  }
  return 0;
}

/** The cursor names the last branch served and the order it was served in. */
function encodeCursor(query: BranchListQuery, key: Key): string {
  return Buffer.from(JSON.stringify([query.sort_by, query.sort_order, ...key])).toString("base64url");
}

function decodeCursor(query: BranchListQuery, cursor: string): Key {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    parsed = undefined;
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 4 ||
    (typeof parsed[2] !== "string" && typeof parsed[2] !== "number") ||
    typeof parsed[3] !== "string"
  ) {
    throw badRequest("cursor: not a cursor of this list (use pagination.next of the previous page)");
  }
  if (parsed[0] !== query.sort_by || parsed[1] !== query.sort_order) {
    throw badRequest("cursor: it was given for another sort_by or sort_order");
  }
  return [parsed[2], parsed[3]];
}

export function branchPage(
  all: readonly BranchRecord[],
  query: BranchListQuery,
  maxPage: number,
): BranchPage {
  const direction = query.sort_order === "asc" ? 1 : -1;
  const needle = query.search?.toLowerCase();
  let sorted = all
    .filter((b) => needle === undefined || b.id.includes(needle) || b.name.toLowerCase().includes(needle))
    .map((b) => ({ b, key: sortKey(b, query.sort_by) }))
    .sort((x, y) => direction * compare(x.key, y.key));
  if (query.cursor !== undefined) {
    const after = decodeCursor(query, query.cursor);
    sorted = sorted.filter((x) => direction * compare(x.key, after) > 0);
  }
  const size = Math.min(query.limit, maxPage);
  const page = sorted.slice(0, size);
  const last = page.at(-1);
  return {
    branches: page.map((x) => x.b),
    pagination: {
      ...(last !== undefined && sorted.length > size ? { next: encodeCursor(query, last.key) } : {}),
      sort_by: query.sort_by,
      sort_order: query.sort_order,
    },
  };
}
