/**
 * Webhook tests' parts: a real HTTP receiver in the test process (one path per endpoint, each
 * with its own answers), endpoints written straight to the database, and the check a receiver
 * makes with the `standardwebhooks` package.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { PrismaClient } from '../../generated/prisma/client.ts';
import type { Credentials } from '../../src/db/credentials.ts';
import { randomId } from '../../src/shared/ids.ts';
import type { AttemptOutcome } from '../../src/webhooks/delivery-store.ts';
import { newEndpointSecret } from '../../src/webhooks/secrets.ts';

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

/**
 * What a path answers to its n-th request (1-based): a status, a status after a wait, or `hang`
 * (no answer until the receiver stops).
 */
export type Answer = (n: number) => number | { status: number; afterMs: number } | 'hang';

export interface Receiver {
  /** `http://127.0.0.1:<port>/<path>` */
  url(path: string): string;
  /** How the path answers from now on (default: 200 to everything). */
  answer(path: string, answer: Answer): void;
  /** Requests whose whole body arrived, in order. */
  received: Received[];
  /** The requests to one path. */
  to(path: string): Received[];
  /** The most requests one path had open at once. */
  mostOpen(path: string): number;
  stop(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const answers = new Map<string, Answer>();
  const counts = new Map<string, number>();
  const open = new Map<string, number>();
  const most = new Map<string, number>();
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').slice(1);
    open.set(path, (open.get(path) ?? 0) + 1);
    most.set(path, Math.max(most.get(path) ?? 0, open.get(path)!));
    res.on('close', () => open.set(path, open.get(path)! - 1));
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const n = (counts.get(path) ?? 0) + 1;
      counts.set(path, n);
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      const status = (answers.get(path) ?? (() => 200))(n);
      if (status === 'hang') return;
      const [code, afterMs] = typeof status === 'number' ? [status, 0] : [status.status, status.afterMs];
      setTimeout(() => res.writeHead(code, { 'content-type': 'text/plain' }).end(`answer ${code}`), afterMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}/${path}`,
    answer: (path, answer) => void answers.set(path, answer),
    received,
    to: (path) => received.filter((r) => r.path === path),
    mostOpen: (path) => most.get(path) ?? 0,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Answers `statuses` in turn, then the last one to everything after. */
export const inTurn =
  (...statuses: Array<ReturnType<Answer>>): Answer =>
  (n) =>
    statuses[Math.min(n, statuses.length) - 1]!;

export interface TestEndpoint {
  id: string;
  /** The signing secret in full (`whsec_…`). */
  secret: string;
}

/** An endpoint row as the API would write it: its secret encrypted with the credentials key. */
export async function webhookEndpoint(
  prisma: PrismaClient,
  credentials: Credentials,
  fields: { brokerId: string; url: string; mode?: 'live' | 'test'; events?: string[]; status?: 'enabled' | 'disabled'; previousSecret?: string; previousSecretExpiresAt?: Date },
): Promise<TestEndpoint> {
  const secret = newEndpointSecret();
  const id = randomId('we_', 24);
  await prisma.webhookEndpoint.create({
    data: {
      id,
      brokerId: fields.brokerId,
      mode: fields.mode ?? 'live',
      url: fields.url,
      events: fields.events ?? [],
      status: fields.status ?? 'enabled',
      secret: credentials.encrypt(secret),
      ...(fields.previousSecret !== undefined
        ? { previousSecret: credentials.encrypt(fields.previousSecret), previousSecretExpiresAt: fields.previousSecretExpiresAt ?? null }
        : {}),
    },
  });
  return { id, secret };
}

/** The receiver's check: the `standardwebhooks` package's verify with `secret`; the payload, or it throws. */
export function verified(secret: string, copy: Received): unknown {
  const headers = {
    'webhook-id': String(copy.headers['webhook-id']),
    'webhook-timestamp': String(copy.headers['webhook-timestamp']),
    'webhook-signature': String(copy.headers['webhook-signature']),
  };
  return new Webhook(secret).verify(copy.body, headers);
}

/** The outcome of attempt `number`, made under the lease `leasedUntil`, of a delivery that the receiver answered 500, with the schedule not run out. */
export function failedAttempt(deliveryId: bigint, endpointId: string, number: number, leasedUntil: Date): AttemptOutcome {
  return {
    deliveryId: deliveryId.toString(),
    endpointId,
    number,
    leasedUntil,
    attemptedAt: new Date(),
    ok: false,
    gone: false,
    statusCode: 500,
    durationMs: 5,
    nextDelayMs: 0,
    disableAfterHours: 120,
  };
}
