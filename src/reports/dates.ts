import { invalidParameter, missingParameter } from '../http/errors.ts';
import { isCalendarDate } from '../shared/dates.ts';

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
