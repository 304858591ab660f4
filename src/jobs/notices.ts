/**
 * Single e-mails without a record of their own (the password notice): queued by the API, sent by
 * a worker, retried on transient failures (MAIL_ATTEMPTS), never waited for.
 */
import type { Job } from 'bullmq';
import type { Logger } from '../logger.ts';
import { describeMailError, isTransientMailError, type MailMessage, type Mailer } from './mailer.ts';

export interface NoticeJobData {
  message: MailMessage;
}

export interface NoticeOutcomes {
  sent(): void;
  /** The notice failed for good (no try left, or a permanent refusal). */
  failed(): void;
}

export function noticeProcessor(mailer: () => Mailer, log: Logger, outcomes: NoticeOutcomes) {
  return async (job: Job<NoticeJobData>): Promise<unknown> => {
    try {
      const info = await mailer().send(job.data.message);
      outcomes.sent();
      return { messageId: info.messageId };
    } catch (err) {
      const final = !isTransientMailError(err) || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      log.warn({ attempt: job.attemptsMade + 1, final, error: describeMailError(err) }, 'notice e-mail send failed');
      if (final) outcomes.failed();
      throw err;
    }
  };
}
