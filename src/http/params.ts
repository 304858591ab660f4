/**
 * Reading path and query parameters after the schema validator. Each value's form was checked
 * before the validator (src/http/input-hygiene.ts: a number in plain decimal digits that fits a
 * safe integer, no U+0000 anywhere) and its range by the validator (the contract's minimum and
 * maximum), so these helpers read what is known to be valid; they run in `validate`, before any
 * sandbox test scenario.
 */
import { isoInstant } from '../shared/dates.ts';
import type { PageWindow } from '../shared/page.ts';
import { CONTROL_CHARACTERS_REASON, hasControlCharacters } from '../shared/text.ts';
import { invalidParameter } from './errors.ts';

export const DEFAULT_LIMIT = 25;

/** An integer parameter (its form checked by src/http/input-hygiene.ts, its range by the validator), or `fallback` when it is absent. */
export function intParam(value: unknown, fallback: number): number {
  if (value === undefined || value === null || value === '') return fallback;
  return Number(value);
}

/** A `date-time` query parameter (the validator has checked its RFC 3339 form, years 0001 to 9999), or undefined when absent. */
export function instantParam(value: string | undefined, field: string): Date | undefined {
  if (value === undefined) return undefined;
  const instant = isoInstant(value);
  if (!instant) throw invalidParameter(field, 'query', 'format', 'must match format "date-time"');
  return instant;
}

interface PageQuery {
  limit?: unknown;
  offset?: unknown;
  starting_after?: unknown;
  ending_before?: unknown;
}

/**
 * `limit` and where the page starts: `offset`, or the cursors `starting_after` and `ending_before`
 * (each read by `cursor`). A cursor names a row and an offset a position, so an offset above 0 with
 * a cursor is `400 invalid_parameter` (rule `exclusive`).
 */
export function pageParams<K = never>(query: PageQuery, cursor?: (value: unknown) => K): PageWindow<K> {
  const limit = intParam(query.limit, DEFAULT_LIMIT);
  const offset = intParam(query.offset, 0);
  const startingAfter = query.starting_after === undefined || !cursor ? undefined : cursor(query.starting_after);
  const endingBefore = query.ending_before === undefined || !cursor ? undefined : cursor(query.ending_before);
  if (startingAfter === undefined && endingBefore === undefined) return { limit, offset };
  if (offset !== 0) {
    throw invalidParameter('offset', 'query', 'exclusive', 'must not be sent with starting_after or ending_before: a cursor page starts at its cursor');
  }
  return { limit, offset, startingAfter, endingBefore };
}


export function boolParam(value: unknown): boolean {
  return value === true || value === 'true';
}

/** A text input without control characters (`undefined` when absent or empty). */
export function textParam(value: unknown, field: string, location: 'query' | 'body'): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  if (hasControlCharacters(value)) throw invalidParameter(field, location, 'characters', CONTROL_CHARACTERS_REASON);
  return value;
}
