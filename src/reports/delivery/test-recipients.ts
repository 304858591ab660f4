/**
 * Reserved test recipients: addresses at `failed.test` end `failed` (a permanent rejection), at
 * `pending.test` stay `pending` (a temporary failure, tried again). `.test` is reserved by RFC 6761
 * and never delegated, so no real mailbox has such an address. They act in the sandbox and, with
 * live keys, only while mail goes to the local outbox (no `SMTP_URL`); with a real SMTP server they
 * are sent like any address and the server decides (openapi.yaml, *Test recipients*).
 */
import type { Config } from '../../config.ts';

export type TestRecipientOutcome = 'failed' | 'pending';

const DOMAINS: Record<string, TestRecipientOutcome> = { 'failed.test': 'failed', 'pending.test': 'pending' };

/** The outcome a reserved address asks for, or undefined for any other address. */
export function testRecipientOutcome(email: string): TestRecipientOutcome | undefined {
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  return Object.hasOwn(DOMAINS, domain) ? DOMAINS[domain] : undefined;
}

/** The last error a reserved address's attempt records, worded as a mail server's reply. */
export function testRecipientError(email: string, outcome: TestRecipientOutcome): string {
  return outcome === 'failed'
    ? `550 5.1.1 <${email}>: recipient rejected (reserved test address failed.test; nothing sent)`
    : `451 4.3.0 <${email}>: try again later (reserved test address pending.test; nothing sent)`;
}

/**
 * A live attempt's simulated failure: only while mail goes to the local outbox, never past a real
 * SMTP server. `final` as a real failure's: a rejection at once, a deferral on the last attempt.
 */
export function outboxTestFailure(config: Pick<Config, 'smtpUrl'>, email: string, lastAttempt: boolean): { error: string; final: boolean } | undefined {
  if (config.smtpUrl) return undefined;
  const outcome = testRecipientOutcome(email);
  if (!outcome) return undefined;
  return { error: testRecipientError(email, outcome), final: outcome === 'failed' || lastAttempt };
}
