/**
 * Reading path and query parameters after the schema validator. Each value's form was checked
 * before the validator (src/http/input-hygiene.ts: a number in plain decimal digits that fits a
 * safe integer, no U+0000 anywhere) and its range by the validator (the contract's minimum and
 * maximum), so these helpers read what is known to be valid; they run in `validate`, before any
 * sandbox test scenario.
 */
import { isoInstant } from '../shared/dates.ts';
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

export function pageParams(query: { limit?: unknown; offset?: unknown }): { limit: number; offset: number } {
  return {
    limit: intParam(query.limit, DEFAULT_LIMIT),
    offset: intParam(query.offset, 0),
  };
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
