/**
 * Reading path and query parameters after the schema validator. The validator coerces numbers
 * with JavaScript's Number(), so `Infinity`, `1e309` or `1e3` can arrive as "integers"; these
 * helpers hold every value to the contract's own rules and answer `400 invalid_parameter`
 * otherwise. They run in `validate`, before any sandbox test scenario.
 */
import { CONTROL_CHARACTERS_REASON, hasControlCharacters } from '../shared/text.ts';
import { invalidParameter } from './errors.ts';

export const DEFAULT_LIMIT = 25;

/** An integer parameter as written (`25`, not `2.5e1`, `0x19` or `Infinity`) within [min, max]. */
export function intParam(
  value: unknown,
  fallback: number,
  field: string,
  location: 'path' | 'query',
  min: number,
  max: number,
): number {
  if (value === undefined || value === null || value === '') return fallback;
  const text = String(value).trim();
  const n = Number(text);
  if (!/^[0-9]+$/.test(text) || !Number.isSafeInteger(n)) {
    throw invalidParameter(field, location, 'type', 'must be an integer');
  }
  if (n < min) throw invalidParameter(field, location, 'minimum', `must be >= ${min}`);
  if (n > max) throw invalidParameter(field, location, 'maximum', `must be <= ${max}`);
  return n;
}

export function pageParams(query: { limit?: unknown; offset?: unknown }): { limit: number; offset: number } {
  return {
    limit: intParam(query.limit, DEFAULT_LIMIT, 'limit', 'query', 1, 100),
    offset: intParam(query.offset, 0, 'offset', 'query', 0, Number.MAX_SAFE_INTEGER),
  };
}


export function boolParam(value: unknown): boolean {
  return value === true || value === 'true';
}

/**
 * A text input without U+0000, which PostgreSQL cannot store in or compare with `text`
 * (`undefined` when absent or empty).
 */
export function textParam(value: unknown, field: string, location: 'query' | 'body'): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  if (value.includes('\u0000')) throw invalidParameter(field, location, 'characters', 'must not contain U+0000 (NUL)');
  if (hasControlCharacters(value)) throw invalidParameter(field, location, 'characters', CONTROL_CHARACTERS_REASON);
  return value;
}
