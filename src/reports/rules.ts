/** The report bodies' own rules, beyond the schema: the recipients, and the invoices report's dates. */
import { ApiError, invalidParameter, missingParameter } from '../http/errors.ts';
import { isCalendarDate } from '../shared/dates.ts';
import { isEmailAddress } from '../shared/email.ts';

/** At most this many unique normalized recipients per report (openapi.yaml, "Limits"). */
export const MAX_RECIPIENTS = 10;

export { isEmailAddress };

/** Every recipients error also names the limit (`max_recipients`). */
const invalid = (field: string, rule: string, reason: string) =>
  invalidParameter(field, 'body', rule, reason, { max_recipients: MAX_RECIPIENTS });

/**
 * The report recipients rules (invoices and services reports), in the order openapi.yaml gives:
 * missing or null → `missing_parameter`; not an array, an item not a string, an invalid address or
 * no non-empty address left → `invalid_parameter` (details carry `max_recipients: 10`); items are
 * trimmed and empty ones dropped, addresses lower-cased and de-duplicated (first occurrence order);
 * more than 10 unique → `too_many_recipients`.
 *
 * `requiredFields` names every required body field for the `missing_parameter` details.
 */
export function normalizeRecipients(value: unknown, requiredFields: string[] = ['recipients']): string[] {
  if (value === undefined || value === null) {
    throw missingParameter(['recipients'], requiredFields);
  }
  if (!Array.isArray(value)) throw invalid('recipients', 'type', 'must be array');
  const unique = new Set<string>();
  value.forEach((item: unknown, index) => {
    if (typeof item !== 'string') {
      throw invalid(`recipients[${index}]`, 'type', 'must be string');
    }
    const address = item.trim();
    if (address === '') return;
    if (!isEmailAddress(address)) {
      throw invalid(`recipients[${index}]`, 'email', 'not a valid e-mail address');
    }
    unique.add(address.toLowerCase());
  });
  if (unique.size === 0) throw invalid('recipients', 'min_items', 'must contain at least one non-empty e-mail address');
  if (unique.size > MAX_RECIPIENTS) {
    throw new ApiError('too_many_recipients', `At most ${MAX_RECIPIENTS} unique recipients are allowed; ${unique.size} were given`, {
      max_recipients: MAX_RECIPIENTS,
      recipient_count: unique.size,
    });
  }
  return [...unique];
}

/**
 * The invoices report's date rules: missing or empty → `missing_parameter` naming both date fields
 * as required; not `YYYY-MM-DD`, not a real date, or start after end → `invalid_parameter`.
 */
export function validateDateRange(
  startDate: unknown,
  endDate: unknown,
  requiredFields: string[] = ['start_date', 'end_date'],
): { start: string; end: string } {
  const missing = (['start_date', 'end_date'] as const).filter((field) => {
    const v = field === 'start_date' ? startDate : endDate;
    return v === undefined || v === null || (typeof v === 'string' && v.trim() === '');
  });
  if (missing.length > 0) {
    throw missingParameter(missing, requiredFields);
  }
  const invalid = (field: string, rule: string, reason: string, extra: Record<string, unknown> = {}) =>
    invalidParameter(field, 'body', rule, reason, extra);
  for (const [field, v] of [['start_date', startDate], ['end_date', endDate]] as const) {
    if (typeof v !== 'string') throw invalid(field, 'type', 'must be string');
    if (!isCalendarDate(v)) throw invalid(field, 'format', 'must match format "date"');
  }
  const start = startDate as string;
  const end = endDate as string;
  if (start > end) {
    throw invalid('start_date', 'date_order', 'must not be after end_date', { start_date: start, end_date: end });
  }
  return { start, end };
}
