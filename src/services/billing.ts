/**
 * Period k starts at created_at plus k cycles, counted from created_at each time so a clamped day
 * (31 Jan → 28 Feb) never drifts the anchor (→ 31 Mar).
 */
export type BillingCycle = 'monthly' | 'quarterly' | 'annually';

export const CYCLE_MONTHS: Record<BillingCycle, number> = { monthly: 1, quarterly: 3, annually: 12 };

/** `date` plus `months` calendar months (UTC), clamped to the last day of the target month. */
export function addMonthsClamped(date: Date, months: number): Date {
  const y = date.getUTCFullYear();
  const m = date.getUTCMonth() + months;
  const targetYear = y + Math.floor(m / 12);
  const targetMonth = ((m % 12) + 12) % 12;
  const lastDay = new Date(Date.UTC(targetYear, targetMonth + 1, 0)).getUTCDate();
  return new Date(
    Date.UTC(
      targetYear,
      targetMonth,
      Math.min(date.getUTCDate(), lastDay),
      date.getUTCHours(),
      date.getUTCMinutes(),
      date.getUTCSeconds(),
      date.getUTCMilliseconds(),
    ),
  );
}

/** The first period boundary strictly after `now`, when an end_of_billing_period cancellation takes effect. */
export function endOfCurrentBillingPeriod(createdAt: Date, cycle: BillingCycle, now: Date): Date {
  const step = CYCLE_MONTHS[cycle];
  if (now.getTime() < createdAt.getTime()) return addMonthsClamped(createdAt, step);
  // Jump close to the answer, then walk: months between the two dates, rounded down to cycles.
  const monthsBetween =
    (now.getUTCFullYear() - createdAt.getUTCFullYear()) * 12 + (now.getUTCMonth() - createdAt.getUTCMonth());
  let k = Math.max(1, Math.floor(monthsBetween / step));
  while (k > 1 && addMonthsClamped(createdAt, (k - 1) * step).getTime() > now.getTime()) k -= 1;
  let end = addMonthsClamped(createdAt, k * step);
  while (end.getTime() <= now.getTime()) {
    k += 1;
    end = addMonthsClamped(createdAt, k * step);
  }
  return end;
}
