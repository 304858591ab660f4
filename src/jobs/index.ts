/**
 * Background work on BullMQ, as a generic adapter: named queues (queues.ts), the mail transport
 * (mailer.ts) and single notice e-mails (notices.ts). What a report job does is src/reports'; the
 * composition of both is src/background.ts.
 */
export { createJobQueues, DEFAULT_PREFIX, QueueUnavailableError, withTimeout, type JobQueues, type Processor, type WorkerSpec } from './queues.ts';
export { createMailer, describeMailError, isTransientMailError, type MailAttachment, type MailMessage, type Mailer } from './mailer.ts';
export { noticeProcessor, type NoticeJobData } from './notices.ts';
export { startPeriodic } from './periodic.ts';

/** The queue of every e-mail (report e-mails and notices); other queues are named by what they carry, where it lives. */
export const MAIL_QUEUE = 'mail';
