// deliver() against a real HTTP receiver in this process (node:http on 127.0.0.1, so allowPrivate).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { deliver, type DeliveryAttempt, type DeliveryResult } from '../../src/webhooks/deliver.ts';
import { newEndpointSecret } from '../../src/webhooks/secrets.ts';
import { signatureHeaders } from '../../src/webhooks/sign.ts';

interface Received {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const SECRET = newEndpointSecret();
const BODY = '{"type":"service.created","timestamp":"2026-03-10T12:00:00Z","data":{"service_number":123456789}}';
const received: Received[] = [];
let server: http.Server;
let base: string;

/** Open connections to the receiver, as it sees them: an attempt must leave none behind. */
const openConnections = (): Promise<number> => new Promise((resolve) => server.getConnections((_error, count) => resolve(count)));

/**
 * The receiver: what each path answers. `/hang` never answers; `/drip` answers 200 and never ends
 * its body; `/huge` announces 2 GB; `/endless` streams chunks without end; `/slow` a byte a second.
 */
function answer(req: http.IncomingMessage, res: http.ServerResponse): void {
  switch (req.url) {
    case '/ok':
      return void res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks');
    case '/accepted':
      return void res.writeHead(202).end();
    case '/fail':
      return void res.writeHead(500).end('x'.repeat(5000));
    case '/gone':
      return void res.writeHead(410).end('endpoint removed');
    case '/nul':
      return void res.writeHead(400).end('bad\u0000input');
    case '/cut':
      // 1023 ASCII bytes, then a 3-byte character across the 1 KiB mark.
      return void res.writeHead(500).end(`${'a'.repeat(1023)}€€`);
    case '/redirect':
      return void res.writeHead(302, { location: `${base}/target` }).end();
    case '/target':
      return void res.writeHead(200).end();
    case '/hang':
      return;
    case '/drip':
      res.writeHead(200);
      return void res.write('still working');
    case '/huge': {
      res.writeHead(200, { 'content-length': String(2 * 1024 ** 3) });
      const chunk = Buffer.alloc(64 * 1024, 120);
      const more = (): void => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', more);
      };
      return more();
    }
    case '/endless': {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => res.write('x'.repeat(4096)), 1);
      return void res.on('close', () => clearInterval(timer));
    }
    case '/slow': {
      res.writeHead(200);
      const timer = setInterval(() => res.write('x'), 1000);
      res.write('x');
      return void res.on('close', () => clearInterval(timer));
    }
    default:
      res.writeHead(404).end();
  }
}

before(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      answer(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(() => {
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
});

function attempt(url: string, change: Partial<DeliveryAttempt> = {}): DeliveryAttempt {
  return {
    url,
    body: BODY,
    headers: signatureHeaders({ eventId: 'evt_1', body: BODY, secrets: [SECRET] }),
    timeoutMs: 5000,
    allowPrivate: true,
    userAgent: 'ClientAPI-Webhooks/1 (test)',
    ...change,
  };
}

/** The result without its duration, which varies. */
function outcome({ durationMs, ...rest }: DeliveryResult): Omit<DeliveryResult, 'durationMs'> {
  assert.ok(durationMs >= 0 && Number.isInteger(durationMs), String(durationMs));
  return rest;
}

describe('deliver() against a real receiver', () => {
  const rows: Array<[path: string, expected: Omit<DeliveryResult, 'durationMs'>]> = [
    ['/ok', { ok: true, status: 200, gone: false, excerpt: 'thanks' }],
    ['/accepted', { ok: true, status: 202, gone: false, excerpt: '' }],
    ['/fail', { ok: false, status: 500, gone: false, excerpt: 'x'.repeat(1024) }],
    ['/gone', { ok: false, status: 410, gone: true, excerpt: 'endpoint removed' }],
    ['/redirect', { ok: false, status: 302, gone: false, excerpt: '' }],
    ['/nowhere', { ok: false, status: 404, gone: false, excerpt: '' }],
    // A database text column holds no NUL; a character cut at 1 KiB is dropped, not mangled.
    ['/nul', { ok: false, status: 400, gone: false, excerpt: 'bad\uFFFDinput' }],
    ['/cut', { ok: false, status: 500, gone: false, excerpt: 'a'.repeat(1023) }],
  ];
  for (const [path, expected] of rows) {
    test(`${path} → ${expected.ok ? 'ok' : 'failed'}, ${expected.status}${expected.gone ? ', gone' : ''}`, async () => {
      assert.deepEqual(outcome(await deliver(attempt(`${base}${path}`))), expected);
    });
  }

  test('a redirect is not followed: its target never gets a request', async () => {
    received.length = 0;
    await deliver(attempt(`${base}/redirect`));
    await sleep(100);
    assert.deepEqual(received.map((r) => r.path), ['/redirect']);
  });

  test('the request: POST, the body as it is, and exactly the headers Standard Webhooks names', async () => {
    received.length = 0;
    const headers = signatureHeaders({ eventId: 'evt_42', body: BODY, secrets: [SECRET, newEndpointSecret()] });
    await deliver(attempt(`${base}/ok`, { headers }));
    const [request] = received;
    assert.ok(request);
    assert.equal(request.method, 'POST');
    assert.equal(request.body, BODY);
    assert.deepEqual(Object.keys(request.headers).sort(), [
      'connection',
      'content-length',
      'content-type',
      'host',
      'user-agent',
      'webhook-id',
      'webhook-signature',
      'webhook-timestamp',
    ]);
    assert.equal(request.headers['content-type'], 'application/json');
    assert.equal(request.headers['content-length'], String(Buffer.byteLength(BODY)));
    assert.equal(request.headers['user-agent'], 'ClientAPI-Webhooks/1 (test)');
    assert.equal(request.headers['webhook-id'], 'evt_42');
    assert.equal(request.headers['webhook-timestamp'], headers['webhook-timestamp']);
    assert.equal(request.headers['webhook-signature'], headers['webhook-signature']);
    // What the receiver does with the standardwebhooks package.
    assert.deepEqual(new Webhook(SECRET).verify(request.body, request.headers as Record<string, string>), JSON.parse(BODY));
    assert.throws(() => new Webhook(SECRET).verify(`${request.body} `, request.headers as Record<string, string>), /No matching signature/);
  });

  test('a receiver that never answers: the attempt ends at the timeout', async () => {
    const result = await deliver(attempt(`${base}/hang`, { timeoutMs: 300 }));
    assert.equal(result.ok, false);
    assert.equal(result.status, undefined);
    assert.equal(result.error, 'timeout after 300 ms');
    assert.ok(result.durationMs >= 300 && result.durationMs < 3000, String(result.durationMs));
  });

  test('the recorded duration of a timed-out attempt is never under the timeout (timers count whole milliseconds)', async () => {
    const durations: number[] = [];
    for (let i = 0; i < 100; i++) durations.push((await deliver(attempt(`${base}/hang`, { timeoutMs: 10 }))).durationMs);
    assert.ok(Math.min(...durations) >= 10, durations.join(' '));
  });

  // Of the body only the first kilobyte is read, for at most half a second after the headers; then
  // the connection is dropped, so what the receiver sends after holds no slot.
  const excerpts: Record<string, RegExp> = { '/drip': /^still working$/, '/huge': /^x{1024}$/, '/endless': /^x{1024}$/, '/slow': /^x+$/ };
  for (const [path, excerpt] of Object.entries(excerpts)) {
    test(`${path}: a 200 whose body does not end is over once its first kilobyte or half a second is in, and its connection dropped`, async () => {
      const result = await deliver(attempt(`${base}${path}`, { timeoutMs: 10_000 }));
      const { excerpt: text, ...rest } = outcome(result);
      assert.deepEqual(rest, { ok: true, status: 200, gone: false });
      assert.match(text ?? '', excerpt);
      assert.ok(result.durationMs < 2000, String(result.durationMs));
      let open = -1;
      for (let tries = 0; tries < 100 && open !== 0; tries++) {
        open = await openConnections();
        if (open !== 0) await sleep(20);
      }
      assert.equal(open, 0, 'the receiver sees its connection closed');
    });
  }

  test('no connection is left open after an attempt (nothing keeps the process alive)', async () => {
    await deliver(attempt(`${base}/ok`));
    await deliver(attempt(`${base}/hang`, { timeoutMs: 100 }));
    let open = -1;
    for (let tries = 0; tries < 50 && open !== 0; tries++) {
      open = await openConnections();
      if (open !== 0) await sleep(20);
    }
    assert.equal(open, 0);
  });
});

describe('deliver() failures without an answer', () => {
  const port = (): string => new URL(base).port;
  const rows: Array<[name: string, url: () => string, change: Partial<DeliveryAttempt>, error: RegExp]> = [
    ['localhost without allowPrivate: refused by name', () => `https://localhost:${port()}/ok`, { allowPrivate: false }, /^the webhook URL's host localhost is this machine \(localhost\); to receive webhooks on your own machine run npx client-api-v1 listen /],
    ['an IP-literal loopback host without allowPrivate', () => `https://127.0.0.1:${port()}/ok`, { allowPrivate: false }, /^address 127\.0\.0\.1 is loopback; to receive webhooks on your own machine run npx client-api-v1 listen /],
    ['http without allowPrivate', () => `http://hooks.example.com/`, { allowPrivate: false }, /^the webhook URL must use https:, not http:; to receive webhooks on your own machine run npx client-api-v1 listen /],
    ['the metadata address with allowPrivate', () => 'http://169.254.169.254/latest/meta-data/', {}, /^address 169\.254\.169\.254 is a cloud metadata address$/],
    ['not a URL', () => 'hooks.example.com', {}, /not a valid absolute URL/],
    ['nobody listening', () => 'http://127.0.0.1:1/', {}, /^ECONNREFUSED$/],
    ['a user agent Node refuses', () => `${base}/ok`, { userAgent: 'a\r\nb' }, /Invalid character in header content/],
  ];
  for (const [name, url, change, error] of rows) {
    test(`${name} → ${error}`, async () => {
      received.length = 0;
      const result = await deliver(attempt(url(), change));
      assert.equal(result.ok, false);
      assert.equal(result.gone, false);
      assert.equal(result.status, undefined);
      assert.match(result.error ?? '', error);
      assert.deepEqual(received, []);
    });
  }

  test('localhost with allowPrivate is delivered to', async () => {
    const result = await deliver(attempt(`http://localhost:${new URL(base).port}/ok`));
    assert.equal(result.status, 200, result.error);
  });
});
