/**
 * The `date` and `date-time` formats as the database can store them. ajv-formats accepts year 0000,
 * which PostgreSQL refuses (a 500 where the client deserves a 400), so the contract's formats are
 * checked here: a real calendar date from 0001-01-01 to 9999-12-31, RFC 3339 times.
 */
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|([+-])(\d{2}):(\d{2}))$/;
const EARLIEST = Date.parse('0001-01-02T00:00:00Z');

const daysIn = (year: number, month: number): number =>
  month === 2 ? (year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;

export function isCalendarDate(text: string): boolean {
  const match = DATE.exec(text);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  return year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= daysIn(year, month);
}

export function isDateTime(text: string): boolean {
  const match = DATE_TIME.exec(text);
  if (!match || !isCalendarDate(match[1]!)) return false;
  const [hour, minute, second] = [Number(match[2]), Number(match[3]), Number(match[4])];
  if (hour > 23 || minute > 59 || second > 59) return false;
  if (match[7] !== undefined && (Number(match[8]) > 23 || Number(match[9]) > 59)) return false;
  // An offset must not carry the instant before year 1 either.
  return Date.parse(text) >= EARLIEST;
}

export const contractFormats = {
  date: { type: 'string' as const, validate: isCalendarDate },
  'date-time': { type: 'string' as const, validate: isDateTime },
};
