/**
 * Dates run from 0001-01-01 to 9999-12-31 (what PostgreSQL stores), UTC unless an offset is named.
 * `Date.UTC` is never given a year directly: it maps years 0-99 to 1900-1999.
 */
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
/** RFC 3339's shape: seconds and a zone (`Z` or `±hh:mm`) required. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:[Zz]|[+-]\d{2}:\d{2})$/;
const EARLIEST = Date.parse('0001-01-02T00:00:00Z');

const daysIn = (year: number, month: number): number =>
  month === 2 ? (year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;

export function isCalendarDate(text: string): boolean {
  const match = DATE.exec(text);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  return year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= daysIn(year, month);
}

/** An RFC 3339 date-time: that shape, and an instant isoInstant accepts (real date and time, year >= 1). */
export function isDateTime(text: string): boolean {
  return DATE_TIME.test(text) && isoInstant(text) !== undefined;
}

/**
 * `modified_since` takes "an ISO 8601 date or date-time" (operating contract), wider than RFC 3339:
 * seconds optional, zone `Z`, `±hh`, `±hhmm`, `±hh:mm` or none (UTC).
 */
const ISO_DATE_TIME = /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?([Zz]|[+-]\d{2}(?::?\d{2})?)?$/;

/** The instant an ISO 8601 date-time names, or undefined when it is not one (or before year 1). */
export function isoInstant(text: string): Date | undefined {
  const match = ISO_DATE_TIME.exec(text);
  if (!match || !isCalendarDate(match[1]!)) return undefined;
  if (Number(match[2]) > 23 || Number(match[3]) > 59 || Number(match[4] ?? 0) > 59) return undefined;
  let zone = 'Z';
  if (match[6] !== undefined && !/^[Zz]$/.test(match[6])) {
    const digits = match[6].slice(1).replace(':', '');
    const [hours, minutes] = [digits.slice(0, 2), digits.slice(2) || '00'];
    if (Number(hours) > 23 || Number(minutes) > 59) return undefined;
    zone = `${match[6][0]}${hours}:${minutes}`;
  }
  // Milliseconds are the precision kept: a longer fraction is cut, not rounded.
  const canonical = `${match[1]}T${match[2]}:${match[3]}:${match[4] ?? '00'}${(match[5] ?? '').slice(0, 4)}${zone}`;
  const ms = Date.parse(canonical);
  return Number.isNaN(ms) || ms < EARLIEST ? undefined : new Date(ms);
}

/** Midnight UTC of a real calendar date `YYYY-MM-DD`, or undefined when it is not one. */
export function calendarDate(text: string): Date | undefined {
  if (!isCalendarDate(text)) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(Number(text.slice(0, 4)), Number(text.slice(5, 7)) - 1, Number(text.slice(8, 10)));
  return date;
}

/** The first and last instants the database stores here (years 1 to 9999, UTC). */
export const FIRST_INSTANT = new Date('0001-01-01T00:00:00.000Z').getTime();
export const LAST_INSTANT = new Date('9999-12-31T23:59:59.999Z').getTime();

/**
 * Year 0000 passes the `date-time` format but PostgreSQL refuses it; as a filter bound, the clamped
 * instant still means "before (or after) every record".
 */
export function clampInstant(date: Date): Date {
  return new Date(Math.min(Math.max(date.getTime(), FIRST_INSTANT), LAST_INSTANT));
}

/** A `created_gte`/`created_lt` pair as a range filter, or undefined when neither bound is given. */
export function instantRange(gte: Date | undefined, lt: Date | undefined): { gte?: Date; lt?: Date } | undefined {
  if (gte === undefined && lt === undefined) return undefined;
  return { ...(gte !== undefined && { gte }), ...(lt !== undefined && { lt }) };
}

/** A date (midnight UTC) or an ISO 8601 date-time (`isoInstant`), or undefined when it is neither. */
export function dateOrInstant(text: string): Date | undefined {
  return /^\d{4}-\d{2}-\d{2}$/.test(text) ? calendarDate(text) : isoInstant(text);
}
