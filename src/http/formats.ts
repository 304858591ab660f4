/**
 * The `date` and `date-time` formats as the database can store them. ajv-formats accepts year 0000,
 * which PostgreSQL refuses (a 500 where the client deserves a 400), so the contract's formats are
 * checked here (src/shared/dates.ts): a real calendar date from 0001-01-01 to 9999-12-31, RFC 3339 times.
 */
import { isCalendarDate, isDateTime, isoInstant } from '../shared/dates.ts';

export const contractFormats = {
  date: { type: 'string' as const, validate: isCalendarDate },
  'date-time': { type: 'string' as const, validate: isDateTime },
  'iso8601-date-time': { type: 'string' as const, validate: (text: string) => isoInstant(text) !== undefined },
};
