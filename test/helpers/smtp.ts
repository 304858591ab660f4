import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  /** Envelope recipients (RCPT TO) of the SMTP transaction, lower-cased. */
  rcptTo: string[];
  parsed: ParsedMail;
}

export interface TestSmtpOptions {
  /** Addresses answered `550 5.1.1` at RCPT TO (permanent rejection). */
  reject?: string[];
  /** Addresses answered `451 4.3.0` at RCPT TO this many times before being accepted (transient). */
  tempFail?: Record<string, number>;
}

export interface TestSmtp {
  /** `smtp://127.0.0.1:<port>` for SMTP_URL (no TLS, no auth). */
  url: string;
  port: number;
  received: ReceivedMail[];
  /** RCPT TO attempts per address (accepted or not). */
  rcptAttempts: Map<string, number>;
  /** Messages delivered to an address. */
  to(address: string): ReceivedMail[];
  /** Stops listening (later connections are refused); safe to call twice. */
  stop(): Promise<void>;
}

/** A real SMTP server (smtp-server) on a free local port that keeps every message, parsed with mailparser. */
export async function startTestSmtp(options: TestSmtpOptions = {}): Promise<TestSmtp> {
  const reject = new Set((options.reject ?? []).map((a) => a.toLowerCase()));
  const tempFail = new Map(Object.entries(options.tempFail ?? {}).map(([a, n]) => [a.toLowerCase(), n]));
  const received: ReceivedMail[] = [];
  const rcptAttempts = new Map<string, number>();
  const server = new SMTPServer({
    secure: false,
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    size: 50 * 1024 * 1024,
    onRcptTo(address, _session, callback) {
      const email = address.address.toLowerCase();
      const attempt = (rcptAttempts.get(email) ?? 0) + 1;
      rcptAttempts.set(email, attempt);
      if (reject.has(email)) {
        const err = Object.assign(new Error(`5.1.1 <${email}>: Recipient address rejected: user unknown`), { responseCode: 550 });
        callback(err);
        return;
      }
      if (attempt <= (tempFail.get(email) ?? 0)) {
        const err = Object.assign(new Error('4.3.0 Temporary failure, try again later'), { responseCode: 451 });
        callback(err);
        return;
      }
      callback();
    },
    onData(stream, session, callback) {
      simpleParser(stream)
        .then((parsed) => {
          received.push({ rcptTo: session.envelope.rcptTo.map((r) => r.address.toLowerCase()), parsed });
          callback();
        })
        .catch((err: Error) => callback(err));
    },
  });
  server.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  let stopped = false;
  return {
    url: `smtp://127.0.0.1:${port}`,
    port,
    received,
    rcptAttempts,
    to: (address) => received.filter((m) => m.rcptTo.includes(address.toLowerCase())),
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
