/** Each parser throws `InvalidValue` with a reason short enough to follow a field name. */
import ipaddr from 'ipaddr.js';
import { calendarDate, dateOrInstant } from '../shared/dates.ts';

export class InvalidValue extends Error {
  override readonly name = 'InvalidValue';
}

/** `YYYY-MM-DD`, a real calendar date; midnight UTC (what a Prisma `@db.Date` field takes). */
export function parseDateOnly(text: string): Date {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) throw new InvalidValue(`must be a date YYYY-MM-DD, got ${JSON.stringify(text)}`);
  const date = calendarDate(text);
  if (!date) throw new InvalidValue(`${JSON.stringify(text)} is not a real date`);
  return date;
}

/** Without an offset a date-time is UTC, never the machine's local time, as the API's `modified_since` reads it. */
export function parseTimestamp(text: string): Date {
  const trimmed = text.trim();
  if (!/^\d{4}-\d{2}-\d{2}(?:[Tt ]|$)/.test(trimmed)) {
    throw new InvalidValue(`must be an ISO 8601 date or date-time, got ${JSON.stringify(text)}`);
  }
  const instant = dateOrInstant(trimmed.replace(' ', 'T'));
  if (!instant) throw new InvalidValue(`${JSON.stringify(text)} is not a real ISO 8601 date or date-time`);
  return instant;
}

const AMOUNT_RE = /^(\d{1,12})(?:\.(\d{1,2}))?$/;

/**
 * The exact decimal string for `Decimal(14,2)`. A JSON number's `String(n)` is the literal written
 * whenever it has at most 15 significant digits, as every `Decimal(14,2)` value has: no float arithmetic.
 */
export function parseAmount(value: unknown): string {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new InvalidValue('must be a decimal number');
    text = String(value);
  } else if (typeof value === 'string') {
    text = value.trim();
  } else {
    throw new InvalidValue(`must be a decimal number, got ${describe(value)}`);
  }
  if (text.startsWith('-')) throw new InvalidValue(`must not be negative, got ${JSON.stringify(text)}`);
  const m = AMOUNT_RE.exec(text);
  if (!m) {
    if (/^\d+\.\d{3,}$/.test(text)) throw new InvalidValue(`has more than 2 decimals: ${JSON.stringify(text)}`);
    if (/^\d{13,}(\.\d*)?$/.test(text)) throw new InvalidValue(`is too large (at most 12 integer digits): ${JSON.stringify(text)}`);
    throw new InvalidValue(`must be a decimal number with at most 2 decimals, got ${JSON.stringify(text)}`);
  }
  const integer = m[1]!.replace(/^0+(?=\d)/, '');
  return m[2] === undefined ? integer : `${integer}.${m[2]}`;
}

/** A positive 32-bit integer (the `Int` columns), from a JSON number or a string of digits. */
export function parsePositiveInt(value: unknown, max = 2_147_483_647): number {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > max) {
    throw new InvalidValue(`must be a whole number from 1 to ${max}, got ${describe(value)}`);
  }
  return n;
}

/** A short rendering of a value for an error message. */
export function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  const text = typeof value === 'string' ? JSON.stringify(value) : JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** IPv4 must be dotted four-part decimal: ipaddr.js would also take `10.1` or `0x0a000001`, which nobody means. */
export function parseIpEntry(raw: string): string {
  const text = raw.trim();
  const slash = text.indexOf('/');
  const address = slash === -1 ? text : text.slice(0, slash);
  const v4 = ipaddr.IPv4.isValidFourPartDecimal(address);
  const v6 = !v4 && !address.includes('%') && ipaddr.IPv6.isValid(address);
  if (!v4 && !v6) throw new InvalidValue(`${JSON.stringify(raw)} is not an IPv4 or IPv6 address or CIDR block`);
  if (slash === -1) {
    const parsed = ipaddr.parse(address);
    // An IPv4-mapped address (`::ffff:10.0.0.1`) is stored as the IPv4 address it is.
    return parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()
      ? (parsed as ipaddr.IPv6).toIPv4Address().toString()
      : parsed.toString();
  }
  const bitsText = text.slice(slash + 1);
  const maxBits = v4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(bitsText) || Number(bitsText) > maxBits) {
    throw new InvalidValue(`${JSON.stringify(raw)} has an invalid prefix length (0-${maxBits} for IPv${v4 ? 4 : 6})`);
  }
  const [addr, bits] = ipaddr.parseCIDR(`${address}/${Number(bitsText)}`);
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
    return `${(addr as ipaddr.IPv6).toIPv4Address().toString()}/${bits - 96}`;
  }
  return `${addr.toString()}/${bits}`;
}
