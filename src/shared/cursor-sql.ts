/**
 * The SQL of a list page ordered newest first, `(created_at, id)` descending, which both offset
 * and cursor pages share. A cursor compares with its row's own `(created_at, id)`, read in the same
 * statement: neither changes after insert, so a page after (or before) a row holds the same rows
 * whatever was inserted meanwhile (new rows sort first).
 */
import { Prisma } from '../../generated/prisma/client.ts';
import { InvalidValueError } from './errors.ts';
import type { PageWindow } from './page.ts';

export interface CursorSql {
  /** The page's extra condition (`true` for an offset page). */
  page: Prisma.Sql;
  /** `DESC`, or `ASC` for the rows just before a cursor (the caller then shows them newest first). */
  direction: Prisma.Sql;
  /** An aggregate: how many of the filtered rows sort ahead of the page's first row (see `cursorOffset`). */
  ahead: Prisma.Sql;
}

/**
 * `key` is the list's `(created_at, id)`; `after` and `before` select the cursor rows' (the
 * `starting_after` and `ending_before` rows). With both, the page is the rows between them, from
 * the one after `after` on.
 */
export function cursorSql(key: Prisma.Sql, after: Prisma.Sql | undefined, before: Prisma.Sql | undefined): CursorSql {
  if (after !== undefined) {
    const page = before === undefined ? Prisma.sql`${key} < ${after}` : Prisma.sql`${key} < ${after} AND ${key} > ${before}`;
    return { page, direction: Prisma.sql`DESC`, ahead: Prisma.sql`count(*) FILTER (WHERE ${key} >= ${after})` };
  }
  if (before !== undefined) {
    return { page: Prisma.sql`${key} > ${before}`, direction: Prisma.sql`ASC`, ahead: Prisma.sql`count(*) FILTER (WHERE ${key} > ${before})` };
  }
  return { page: Prisma.sql`true`, direction: Prisma.sql`DESC`, ahead: Prisma.sql`0` };
}

/** How a list finds the row a cursor names, among its own rows only. */
export interface CursorRows<K> {
  /** The list's table, and its alias in the page's query (the key is `(alias."created_at", alias."id")`). */
  table: string;
  alias: string;
  /** The id of the list's row that `value` names, or null. */
  find(value: K): Promise<{ id: string | number } | null>;
  /** Why a cursor names no row of the list (`no service 123 of this broker`). */
  missing(value: K): string;
}

/** cursorSql of a window's cursors; one naming no row of the list is `400 invalid_parameter` (`exists`), as the event feed's. */
export async function windowCursorSql<K>(window: PageWindow<K>, rows: CursorRows<K>): Promise<CursorSql> {
  const rowOf = async (value: K | undefined, field: 'starting_after' | 'ending_before'): Promise<Prisma.Sql | undefined> => {
    if (value === undefined) return undefined;
    const row = await rows.find(value);
    if (!row) throw new InvalidValueError(field, 'query', 'exists', rows.missing(value));
    return Prisma.sql`(SELECT k."created_at", k."id" FROM ${Prisma.raw(`"${rows.table}"`)} k WHERE k."id" = ${row.id})`;
  };
  const key = Prisma.raw(`(${rows.alias}."created_at", ${rows.alias}."id")`);
  return cursorSql(key, await rowOf(window.startingAfter, 'starting_after'), await rowOf(window.endingBefore, 'ending_before'));
}
