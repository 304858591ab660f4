/**
 * The mail thread's side (started by `createMailer`, src/jobs/mailer.ts): builds and sends each
 * message with the transport of `transportMailer`, off the thread that serves the API. Encoding a
 * report attachment (base64, line wrapping, SMTP dot-stuffing) and writing megabytes to the SMTP
 * socket is tens of milliseconds of CPU per e-mail; on the API's thread ten recipients of a large
 * report held every broker's requests. What it is sent and answers: `ToMailThread`, `FromMailThread`.
 */
import { Readable } from 'node:stream';
import { parentPort, workerData } from 'node:worker_threads';
import type { Config } from '../config.ts';
import { lowerThreadPriority } from '../shared/threads.ts';
import { transportMailer, type FromMailThread, type MailError, type MailMessage, type ToMailThread, type TransportMessage } from './mailer.ts';

/** Bytes of an attachment handed to the encoder at a time: nodemailer encodes inline content in one go. */
const ATTACHMENT_PIECE_BYTES = 64 * 1024;

function* piecesOf(bytes: Uint8Array, size: number): Generator<Buffer> {
  for (let at = 0; at < bytes.length; at += size) yield Buffer.from(bytes.buffer, bytes.byteOffset + at, Math.min(size, bytes.length - at));
}

/** A message as it arrived (bytes come as Uint8Array), large byte contents as streams of pieces. */
function streamed(message: MailMessage): TransportMessage {
  const { attachments, ...rest } = message;
  if (!attachments) return rest;
  return {
    ...rest,
    attachments: attachments.map(({ content, ...a }) => {
      if (!(content instanceof Uint8Array)) return content === undefined ? a : { ...a, content };
      if (content.length <= ATTACHMENT_PIECE_BYTES) return { ...a, content: Buffer.from(content.buffer, content.byteOffset, content.byteLength) };
      return { ...a, content: Readable.from(piecesOf(content, ATTACHMENT_PIECE_BYTES), { objectMode: false }) };
    }),
  };
}

function errorData(err: unknown): MailError {
  const e = (err ?? {}) as Partial<MailError>;
  const data: MailError = { message: typeof e.message === 'string' ? e.message : String(err) };
  if (typeof e.code === 'string') data.code = e.code;
  if (typeof e.responseCode === 'number') data.responseCode = e.responseCode;
  if (typeof e.response === 'string') data.response = e.response;
  return data;
}

if (parentPort) {
  const port = parentPort;
  lowerThreadPriority();
  const mailer = transportMailer(workerData as Config);
  port.on('message', (m: ToMailThread) => {
    if (m.type === 'close') {
      mailer.close();
      port.close();
      return;
    }
    mailer.send(streamed(m.message)).then(
      (sent) => port.postMessage({ type: 'sent', id: m.id, sent } satisfies FromMailThread),
      (err: unknown) => port.postMessage({ type: 'failed', id: m.id, error: errorData(err) } satisfies FromMailThread),
    );
  });
}
