/** One page of a list, as every list operation answers it (openapi.yaml `Pagination`). */
export interface Page<T> {
  data: T[];
  pagination: { total: number; limit: number; offset: number; has_more: boolean };
}

export function pageOf<T>(data: T[], total: number, limit: number, offset: number): Page<T> {
  return { data, pagination: { total, limit, offset, has_more: offset + data.length < total } };
}

/**
 * Where an offset-paged list's page starts: `offset` rows skipped, or a cursor row of the list,
 * the page then holding the rows right after it (`startingAfter`) or right before it
 * (`endingBefore`), or with both the rows between them. A cursor names a row, not a position, so
 * rows inserted meanwhile move nothing.
 */
export interface PageWindow<K> {
  limit: number;
  offset: number;
  startingAfter?: K | undefined;
  endingBefore?: K | undefined;
}

/**
 * The `offset` a cursor page shows: the matching rows ahead of it in the list's order. `ahead`
 * counts the rows sorting before the cursor row (itself included when paging after it).
 */
export function cursorOffset(window: PageWindow<unknown>, ahead: number, rows: number): number {
  if (window.startingAfter !== undefined) return ahead;
  if (window.endingBefore !== undefined) return ahead - rows;
  return window.offset;
}
