/** Walking an offset-or-cursor list (services, requests) page by page, as a mirror's bootstrap does. */
import assert from 'node:assert/strict';
import type { Response } from 'supertest';

export interface Pagination {
  total: number;
  limit: number;
  offset: number;
  has_more: boolean;
}

/**
 * Walks `path` with `cursor` (`starting_after`, or `ending_before` from the end backwards), calling
 * `between` after each page (a writer's turn); returns every row id seen, in the order seen.
 */
export async function walk<Id extends string | number>(
  get: (path: string) => Promise<Response>,
  path: string,
  options: { cursor: 'starting_after' | 'ending_before'; limit: number; idOf: (row: Record<string, unknown>) => Id; first?: string; between?: (page: number) => Promise<void> },
): Promise<{ ids: Id[]; pages: Pagination[] }> {
  const ids: Id[] = [];
  const pages: Pagination[] = [];
  const sep = path.includes('?') ? '&' : '?';
  let next = options.first ?? `${path}${sep}limit=${options.limit}`;
  for (let page = 0; page < 1000; page += 1) {
    const res = await get(next);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const rows = res.body.data as Array<Record<string, unknown>>;
    ids.push(...(options.cursor === 'starting_after' ? rows : [...rows].reverse()).map(options.idOf));
    pages.push(res.body.pagination as Pagination);
    await options.between?.(page);
    if (rows.length === 0) break;
    const edge = options.cursor === 'starting_after' ? rows.at(-1)! : rows[0]!;
    next = `${path}${sep}limit=${options.limit}&${options.cursor}=${encodeURIComponent(String(options.idOf(edge)))}`;
  }
  return { ids, pages };
}

/** Each of `expected` exactly once in `seen`, and nothing twice. */
export function assertEachOnce<Id>(seen: Id[], expected: Id[]): void {
  assert.equal(new Set(seen).size, seen.length, `a row seen twice: ${JSON.stringify(seen)}`);
  const missing = expected.filter((id) => !seen.includes(id));
  assert.deepEqual(missing, [], 'rows skipped');
}
