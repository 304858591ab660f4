/**
 * The SQL of a list page ordered newest first, `(created_at, id)` descending, which both offset
 * and cursor pages share. A cursor compares with its row's own `(created_at, id)`, read in the same
 * statement: neither changes after insert, so a page after (or before) a row holds the same rows
 * whatever was inserted meanwhile (new rows sort first).
 */
import { Prisma } from '../../generated/prisma/client.ts';
import type { PageWindow } from './page.ts';

export interface CursorSql {
  /** The page's extra condition (`true` for an offset page). */
  page: Prisma.Sql;
  /** `DESC`, or `ASC` for the rows just before a cursor (the caller then shows them newest first). */
  direction: Prisma.Sql;
  /** The rows the statement skips. */
  offset: number;
  /** An aggregate: how many of the filtered rows sort ahead of the page's first row (see `cursorOffset`). */
  ahead: Prisma.Sql;
}

/** `key` is the list's `(created_at, id)`; `cursorRow` selects the cursor row's, undefined without a cursor. */
export function cursorSql(window: PageWindow<unknown>, key: Prisma.Sql, cursorRow: Prisma.Sql | undefined): CursorSql {
  if (cursorRow === undefined) {
    return { page: Prisma.sql`true`, direction: Prisma.sql`DESC`, offset: window.offset, ahead: Prisma.sql`0` };
  }
  if (window.endingBefore !== undefined) {
    return { page: Prisma.sql`${key} > ${cursorRow}`, direction: Prisma.sql`ASC`, offset: 0, ahead: Prisma.sql`count(*) FILTER (WHERE ${key} > ${cursorRow})` };
  }
  return { page: Prisma.sql`${key} < ${cursorRow}`, direction: Prisma.sql`DESC`, offset: 0, ahead: Prisma.sql`count(*) FILTER (WHERE ${key} >= ${cursorRow})` };
}
