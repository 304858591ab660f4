import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createTransport } from 'nodemailer';
import type { Worker } from 'node:worker_threads';
import type { Config } from '../config.ts';
import { siblingModule, startThread } from '../shared/threads.ts';
import { traced } from '../shared/tracing.ts';

export interface MailAttachment {
  filename: string;
  /** A file readable by the mail worker (same host / same $DATA_DIR). Never put big content into Redis. */
  path?: string;
  /** Inline content: text, or bytes (copied to the mail thread, which streams them to the encoder). */
  content?: string | Uint8Array;
  contentType?: string;
}

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html?: string;
  attachments?: MailAttachment[];
  /** A fixed Message-ID (`<…@…>`), so copies of one message can be recognised as one. */
  messageId?: string;
}

export interface SentMail {
  messageId: string;
  /** The server's answer (SMTP) or the outbox file written. */
  response: string;
}

/** What a transport's failure says of itself, as plain data (it crosses from the mail thread). */
export interface MailError {
  message: string;
  code?: string;
  responseCode?: number;
  response?: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<SentMail>;
  close(): void;
  /** `smtp://host:port` (never the credentials) or the outbox directory. */
  describe: string;
}

/**
 * Bounds per SMTP conversation, RFC 5321 section 4.5.3.2's minutes (greeting 5 min, the answer to
 * the end of DATA 10 min), set apart from how long a report request waits: a slow server that
 * accepts late has delivered, and giving up early would send the message again.
 */
function smtpTimeouts(config: Config): { connectionTimeout: number; greetingTimeout: number; socketTimeout: number } {
  return {
    connectionTimeout: config.smtpConnectionTimeoutMs,
    greetingTimeout: config.smtpGreetingTimeoutMs,
    socketTimeout: config.smtpSocketTimeoutMs,
  };
}

function describeSmtp(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.hostname}${u.port ? `:${u.port}` : ''}`;
  } catch {
    return 'smtp';
  }
}

/** What the mailer and its thread (src/jobs/mail-thread.ts) say to each other; declared here, where the thread is started. */
export type ToMailThread = { type: 'send'; id: number; message: MailMessage } | { type: 'close' };
export type FromMailThread = { type: 'sent'; id: number; sent: SentMail } | { type: 'failed'; id: number; error: MailError };

/** A message as the transport takes it: inside the mail thread, large contents are streams. */
export type TransportMessage = Omit<MailMessage, 'attachments'> & {
  attachments?: Array<Omit<MailAttachment, 'content'> & { content?: string | Buffer | Readable }>;
};

function describeMailer(config: Config): string {
  return config.smtpUrl ? describeSmtp(config.smtpUrl) : config.outboxDir;
}

/**
 * Mail goes to `SMTP_URL` through nodemailer's SMTP transport, or each message is written as an
 * `.eml` file under the outbox (`SMTP_URL=file:///dir`, or unset: `$DATA_DIR/outbox/`; counts as sent). Used inside the mail
 * thread (src/jobs/mail-thread.ts); everything else sends through `createMailer`.
 */
export function transportMailer(config: Config): Omit<Mailer, 'send'> & { send(message: TransportMessage): Promise<SentMail> } {
  const from = config.mailFrom;
  const describe = describeMailer(config);
  if (config.smtpUrl) {
    const transport = createTransport({ url: config.smtpUrl, ...smtpTimeouts(config) });
    return {
      describe,
      async send(message) {
        const info = await transport.sendMail({ from, ...message });
        return { messageId: info.messageId, response: info.response };
      },
      close: () => transport.close(),
    };
  }
  const outbox = describe;
  const transport = createTransport({ streamTransport: true, newline: 'windows' });
  return {
    describe,
    async send(message) {
      await mkdir(outbox, { recursive: true });
      const info = await transport.sendMail({ from, ...message });
      const base = `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomUUID().slice(0, 8)}`;
      const partial = path.join(outbox, `.${base}.eml.partial`);
      const final = path.join(outbox, `${base}.eml`);
      try {
        await pipeline(info.message as Readable, createWriteStream(partial));
        await rename(partial, final);
      } catch (err) {
        await rm(partial, { force: true });
        throw err;
      }
      return { messageId: info.messageId, response: `written to ${final}` };
    },
    close: () => transport.close(),
  };
}

/** The code of a send whose thread stopped before the transport answered: not known to have failed, so retried. */
const THREAD_LOST = 'ETHREADLOST';

/**
 * The mail thread's heap: a small young generation. Its work (a message at a time) leaves little
 * alive, and V8's default nursery kept most of the thread's heap resident beside every later
 * report build (bench/README.md).
 */
const MAIL_THREAD_LIMITS = { maxYoungGenerationSizeMb: 4 };

/**
 * The mailer of this server: messages are built and sent in a worker thread of their own
 * (src/jobs/mail-thread.ts), started at the first send, so that encoding attachments never holds
 * the thread that serves the API. A failure comes back as an Error with the transport's `code`,
 * `responseCode` and `response`, which `isTransientMailError` reads.
 */
export function createMailer(config: Config): Mailer {
  const pending = new Map<number, { resolve: (sent: SentMail) => void; reject: (err: Error) => void }>();
  let nextId = 1;
  let thread: Worker | undefined;
  const threadOf = (): Worker => {
    if (thread) return thread;
    const started = startThread(siblingModule(import.meta.url, 'mail-thread'), { workerData: config, resourceLimits: MAIL_THREAD_LIMITS });
    started.unref();
    const lost = (reason: string) => {
      if (thread === started) thread = undefined;
      for (const p of pending.values()) p.reject(Object.assign(new Error(`the mail thread stopped before the transport answered (${reason})`), { code: THREAD_LOST }));
      pending.clear();
    };
    started.on('message', (m: FromMailThread) => {
      const p = pending.get(m.id);
      pending.delete(m.id);
      if (m.type === 'sent') p?.resolve(m.sent);
      else p?.reject(Object.assign(new Error(m.error.message), m.error));
    });
    started.on('error', (err) => lost(err.message));
    started.on('exit', (code) => lost(`exit code ${code}`));
    thread = started;
    return started;
  };
  return {
    describe: describeMailer(config),
    send(message) {
      const id = nextId++;
      // The span ends with the transport's answer: the SMTP server's reply on it, never the address.
      return traced('e-mail send', 'client', { 'messaging.message.id': message.messageId }, async (span) => {
        const sent = await new Promise<SentMail>((resolve, reject) => {
          pending.set(id, { resolve, reject });
          threadOf().postMessage({ type: 'send', id, message } satisfies ToMailThread);
        }).catch((err: unknown) => {
          span.set({ 'smtp.response': describeMailError(err) });
          throw err;
        });
        span.set({ 'smtp.response': sent.response });
        return sent;
      });
    },
    close() {
      thread?.postMessage({ type: 'close' } satisfies ToMailThread);
      thread = undefined;
    },
  };
}


/**
 * Whether a send failure may succeed later: SMTP 4xx replies and connection-level failures
 * (refused, reset, timed out, DNS) are transient; a 5xx reply (a rejected recipient, a refused
 * login) or a message that cannot be built is permanent and is not retried.
 */
export function isTransientMailError(err: unknown): boolean {
  const e = (err ?? {}) as Partial<MailError>;
  if (typeof e.responseCode === 'number') return e.responseCode >= 400 && e.responseCode < 500;
  const transientCodes = [THREAD_LOST, 'ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'EPROTOCOL'];
  return typeof e.code === 'string' && transientCodes.includes(e.code);
}

/** A one-line description of a send failure for the run record (`550 5.1.1 <x@y>: rejected`, `ECONNECTION: ...`). */
export function describeMailError(err: unknown): string {
  const e = (err ?? {}) as Partial<MailError>;
  const text = (e.response ?? e.message ?? String(err)).replace(/\s+/g, ' ').trim();
  const prefix = typeof e.responseCode === 'number' && !text.startsWith(String(e.responseCode)) ? `${e.responseCode} ` : '';
  const code = e.code && typeof e.responseCode !== 'number' ? `${e.code}: ` : '';
  return `${code}${prefix}${text}`.slice(0, 1000);
}
