/**
 * The HTTP edge as it runs in production: the real server of src/main/server.ts (HTTPS, timeouts)
 * around the real app, TRUST_PROXY end to end, security headers, /healthz, /readyz, /metrics and
 * what reaches the logs.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import express, { type Express } from 'express';
import request from 'supertest';
import { createApp } from '../../src/app.ts';
import { createGate } from '../../src/auth/gate.ts';
import { generateApiKey } from '../../src/auth/keys.ts';
import { createLogger } from '../../src/logger.ts';
import { listen, type ListeningServer } from '../../src/main/server.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey } from '../helpers/factories.ts';
import { LogCapture, makeCertificate, sleep, tmpDir } from './helpers.ts';

let t: TestApp;
const servers: ListeningServer[] = [];
const tmp = tmpDir('capi-ops-http-');

before(async () => {
  t = await createTestApp();
});
after(async () => {
  for (const s of servers) await s.close(100);
  await t?.close();
  tmp.remove();
});

const plain: Parameters<typeof listen>[1] = { port: 0, host: '127.0.0.1', tlsCertFile: undefined, tlsKeyFile: undefined };

async function serve(app: Express, config = plain, timeouts = {}): Promise<ListeningServer> {
  const s = await listen(app, config, timeouts);
  servers.push(s);
  return s;
}

function get(url: string, headers: Record<string, string> = {}, ca?: Buffer): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const client = url.startsWith('https:') ? https : http;
    const req = client.get(url, { headers, ...(ca ? { ca } : {}) }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
  });
}

describe('HTTPS (TLS_CERT_FILE / TLS_KEY_FILE)', () => {
  test('with both files set the API speaks HTTPS on its port, and only HTTPS', async () => {
    const { cert, key } = await makeCertificate(tmp.dir);
    const s = await serve(t.app, { ...plain, tlsCertFile: cert, tlsKeyFile: key });
    assert.equal(s.tls, true);
    assert.match(s.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const { key: apiKeyValue } = await apiKey(t.prisma, { scopes: ['services:read'] });
    const res = await get(`${s.url}/api/v1/auth-check`, { Authorization: `Bearer ${apiKeyValue}` }, readFileSync(cert));
    assert.equal(res.status, 200, res.body);
    assert.equal(JSON.parse(res.body).success, true);
    assert.match(String(res.headers['strict-transport-security']), /max-age=\d+/);
    // A certificate the client does not trust is refused: it really is TLS with this certificate.
    await assert.rejects(get(`${s.url}/healthz`), /self-signed|certificate/i);
    // Plain HTTP on the HTTPS port gets no HTTP answer.
    const port = new URL(s.url).port;
    const plainAnswer = await get(`http://127.0.0.1:${port}/healthz`).then((r) => r.status, () => 'refused');
    assert.notEqual(plainAnswer, 200);
  });

  test('one of the two files alone is a start-up error, not a silent plain-HTTP server', async () => {
    const { cert } = await makeCertificate(tmp.dir);
    await assert.rejects(listen(t.app, { ...plain, tlsCertFile: cert }), /TLS_CERT_FILE and TLS_KEY_FILE/);
  });

  test('unset: plain HTTP', async () => {
    const s = await serve(t.app);
    assert.equal(s.tls, false);
    assert.equal((await get(`${s.url}/healthz`)).status, 200);
  });
});

type Handle = (req: http.IncomingMessage, res: http.ServerResponse, next?: unknown) => void;
/** Express's own dispatch (app.handle), which its typings leave out. */
const handleOf = (app: Express): Handle => {
  const withHandle = app as unknown as { handle: Handle };
  return withHandle.handle.bind(app);
};

describe('requests and responses born with the app\'s prototypes (src/main/server.ts)', () => {
  /** An app that notes, as each request reaches it, which prototypes its req and res were born with. */
  function probedApp(): { app: Express; born: Array<{ request: boolean; response: boolean }> } {
    const app = express();
    const born: Array<{ request: boolean; response: boolean }> = [];
    const handle = handleOf(app);
    (app as unknown as { handle: Handle }).handle = (req, res, next) => {
      born.push({ request: Object.getPrototypeOf(req) === app.request, response: Object.getPrototypeOf(res) === app.response });
      handle(req, res, next);
    };
    app.get('/probe', (req, res) => {
      res.json({ ip: req.ip, path: req.path, query: req.query });
    });
    return { app, born };
  }

  test('over HTTP and HTTPS, each request and response already has the Express prototypes; Express works as ever', async () => {
    const { cert, key } = await makeCertificate(tmp.dir);
    for (const config of [plain, { ...plain, tlsCertFile: cert, tlsKeyFile: key }]) {
      const { app, born } = probedApp();
      const s = await serve(app, config);
      for (let i = 0; i < 2; i++) {
        const res = await get(`${s.url}/probe?x=${i}`, {}, config === plain ? undefined : readFileSync(cert));
        assert.equal(res.status, 200, res.body);
        assert.deepEqual(JSON.parse(res.body), { ip: '127.0.0.1', path: '/probe', query: { x: String(i) } });
      }
      assert.deepEqual(born, [{ request: true, response: true }, { request: true, response: true }], s.url);
    }
  });

  test('the real app, on the real server: the same', async () => {
    const born: boolean[] = [];
    const handle = handleOf(t.app);
    const app = Object.assign(
      (req: http.IncomingMessage, res: http.ServerResponse) => {
        born.push(Object.getPrototypeOf(req) === t.app.request && Object.getPrototypeOf(res) === t.app.response);
        handle(req, res);
      },
      { request: t.app.request, response: t.app.response },
    );
    const s = await serve(app as unknown as Express);
    const res = await get(`${s.url}/healthz`);
    assert.equal(res.status, 200, res.body);
    assert.deepEqual(born, [true]);
  });
});

describe('TRUST_PROXY', () => {
  // A key that only answers 203.0.113.7: the caller IP the app sees decides 200 or 403.
  let key: string;
  before(async () => {
    key = (await apiKey(t.prisma, { scopes: ['services:read'], ipWhitelist: ['203.0.113.7'] })).key;
  });

  test('unset: X-Forwarded-For is ignored, the caller is the socket peer', async () => {
    const s = await serve(createApp({ ...t.deps, config: { ...t.deps.config, trustProxy: false } }));
    const res = await get(`${s.url}/api/v1/auth-check`, { Authorization: `Bearer ${key}`, 'X-Forwarded-For': '203.0.113.7' });
    assert.equal(res.status, 403, res.body);
    const body = JSON.parse(res.body);
    assert.equal(body.error.code, 'insufficient_permissions');
    assert.equal(body.error.details.ip, '127.0.0.1');
  });

  test('loopback: X-Forwarded-For from a proxy on 127.0.0.1 names the caller', async () => {
    const s = await serve(createApp({ ...t.deps, config: { ...t.deps.config, trustProxy: 'loopback' } }));
    const ok = await get(`${s.url}/api/v1/auth-check`, { Authorization: `Bearer ${key}`, 'X-Forwarded-For': '203.0.113.7' });
    assert.equal(ok.status, 200, ok.body);
    // The right-most untrusted address counts: a client cannot prepend its way onto the whitelist.
    const spoofed = await get(`${s.url}/api/v1/auth-check`, { Authorization: `Bearer ${key}`, 'X-Forwarded-For': '203.0.113.7, 198.51.100.1' });
    assert.equal(spoofed.status, 403, spoofed.body);
    assert.equal(JSON.parse(spoofed.body).error.details.ip, '198.51.100.1');
    const direct = await get(`${s.url}/api/v1/auth-check`, { Authorization: `Bearer ${key}` });
    assert.equal(direct.status, 403);
    assert.equal(JSON.parse(direct.body).error.details.ip, '127.0.0.1');
  });
});

/** Headers that guard HTML documents only: not written on JSON answers, written on /docs. */
const HTML_ONLY_HEADERS = [
  'cross-origin-opener-policy',
  'origin-agent-cluster',
  'x-dns-prefetch-control',
  'x-download-options',
  'x-permitted-cross-domain-policies',
  'x-xss-protection',
];

describe('security headers (helmet)', () => {
  test('API answers, errors and probes carry the API set (OWASP REST Security Cheat Sheet)', async () => {
    const { key } = await apiKey(t.prisma, { scopes: ['services:read'] });
    for (const [where, res] of [
      ['auth-check', await request(t.app).get('/api/v1/auth-check').set('Authorization', `Bearer ${key}`)],
      ['auth-check without a key', await request(t.app).get('/api/v1/auth-check')],
      ['healthz', await request(t.app).get('/healthz')],
      ['an unknown path', await request(t.app).get('/nowhere')],
    ] as const) {
      assert.equal(res.headers['x-content-type-options'], 'nosniff', where);
      assert.equal(res.headers['x-frame-options'], 'DENY', where);
      assert.match(res.headers['strict-transport-security'] ?? '', /max-age=\d+/, where);
      assert.equal(res.headers['content-security-policy'], "default-src 'none';frame-ancestors 'none'", where);
      assert.equal(res.headers['referrer-policy'], 'no-referrer', where);
      assert.equal(res.headers['cross-origin-resource-policy'], 'same-origin', where);
      assert.equal(res.headers['x-powered-by'], undefined, where);
      for (const name of HTML_ONLY_HEADERS) assert.equal(res.headers[name], undefined, `${where}: ${name}`);
      // Only a GET's 200 under /api has an ETag, the conditional reads' own (test/http/conditional-reads.test.ts).
      if (where === 'auth-check') assert.match(res.headers.etag ?? '', /^"[\w-]{27}"$/, where);
      else assert.equal(res.headers.etag, undefined, where);
      assert.ok(res.headers['x-request-id'], where);
    }
  });

  test('every /api answer, success or error, is Cache-Control: no-store', async () => {
    const { key } = await apiKey(t.prisma, { scopes: ['services:read'] });
    for (const [where, res] of [
      ['auth-check', await request(t.app).get('/api/v1/auth-check').set('Authorization', `Bearer ${key}`)],
      ['services list', await request(t.app).get('/api/v1/services?limit=1').set('Authorization', `Bearer ${key}`)],
      ['401', await request(t.app).get('/api/v1/auth-check')],
      ['404', await request(t.app).get('/api/v1/nowhere').set('Authorization', `Bearer ${key}`)],
      ['a refused POST', await request(t.app).post('/api/v1/reports/services').set('Authorization', `Bearer ${key}`).send({})],
    ] as const) {
      assert.equal(res.headers['cache-control'], 'no-store', `${where}: ${res.status}`);
    }
  });

  test('/docs has helmet\'s full set and its own CSP (Redoc needs inline scripts and blob: workers), and still loads', async () => {
    const res = await request(t.app).get('/docs');
    assert.equal(res.status, 200);
    const csp = res.headers['content-security-policy'] ?? '';
    assert.match(csp, /script-src 'self' 'unsafe-inline' blob:/);
    assert.match(csp, /worker-src blob:/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.equal(csp.match(/default-src/g)?.length, 1, csp);
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.equal(res.headers['x-frame-options'], 'DENY');
    for (const name of HTML_ONLY_HEADERS) assert.ok(res.headers[name] !== undefined, name);
  });
});

describe('server timeouts', () => {
  const timeouts = { headersTimeoutMs: 300, requestTimeoutMs: 600, keepAliveTimeoutMs: 200, checkIntervalMs: 50 };

  /** Writes `data` one byte every `everyMs` until the server closes the socket; resolves what it answered and when. */
  function trickle(url: string, head: string, data: string, everyMs: number) {
    const { port } = new URL(url);
    return new Promise<{ answer: string; closedAfterMs: number; sentAll: boolean }>((resolve) => {
      const socket = net.connect(Number(port), '127.0.0.1');
      const started = Date.now();
      let answer = '';
      let i = 0;
      let timer: NodeJS.Timeout | undefined;
      socket.on('connect', () => {
        socket.write(head);
        timer = setInterval(() => {
          if (i < data.length && !socket.destroyed) socket.write(data[i++]!);
        }, everyMs);
      });
      socket.on('data', (d) => (answer += d.toString()));
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearInterval(timer);
        resolve({ answer, closedAfterMs: Date.now() - started, sentAll: i >= data.length });
      });
    });
  }

  test('a client sending its headers byte by byte slower than headersTimeout is cut (408)', async (ctx) => {
    const s = await serve(t.app, plain, timeouts);
    const headers = 'GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Padding: aaaaaaaaaaaaaaaaaaaa\r\n\r\n';
    const r = await trickle(s.url, '', headers, 40); // ~3.2 s to send it all
    assert.equal(r.sentAll, false, 'cut before the headers were complete');
    assert.match(r.answer, /^HTTP\/1\.1 408/);
    assert.ok(r.closedAfterMs >= 300 && r.closedAfterMs < 1500, `cut after ${r.closedAfterMs} ms (bound 300 ms + check 50 ms)`);
    ctx.diagnostic(`slow headers cut after ${r.closedAfterMs} ms (headersTimeout 300 ms)`);
  });

  test('a client sending its body slower than requestTimeout is cut', async (ctx) => {
    const s = await serve(t.app, plain, timeouts);
    const { key } = await apiKey(t.prisma, { scopes: ['services:write'] });
    const body = JSON.stringify({ padding: 'x'.repeat(60) });
    const head = `POST /api/v1/auth-check HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const r = await trickle(s.url, head, body, 40); // ~3 s for the body
    assert.equal(r.sentAll, false, 'cut before the body was complete');
    assert.ok(r.closedAfterMs >= 600 && r.closedAfterMs < 2000, `cut after ${r.closedAfterMs} ms (bound 600 ms)`);
    assert.doesNotMatch(r.answer, /^HTTP\/1\.1 200/);
    ctx.diagnostic(`slow body cut after ${r.closedAfterMs} ms (requestTimeout 600 ms): ${r.answer.split('\r\n')[0] || 'closed'}`);
  });

  test('an idle keep-alive connection is closed after keepAliveTimeout', async (ctx) => {
    const s = await serve(t.app, plain, timeouts);
    const r = await trickle(s.url, 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n', '', 1000);
    assert.match(r.answer, /^HTTP\/1\.1 200/);
    assert.ok(r.closedAfterMs < 3000, `closed after ${r.closedAfterMs} ms`);
    ctx.diagnostic(`idle keep-alive closed after ${r.closedAfterMs} ms (keepAliveTimeout 200 ms; Node adds a 1 s grace to the socket timeout)`);
  });
});

describe('/healthz, /readyz', () => {
  test('/healthz: alive, no key needed, outside /api', async () => {
    const res = await request(t.app).get('/healthz');
    assert.equal(res.status, 200);
    assert.equal(res.body.success, true);
    assert.equal(res.body.data.status, 'ok');
    assert.equal(typeof res.body.data.uptime_seconds, 'number');
  });

  test('/readyz: 200 when the database and Redis answer', async () => {
    const res = await request(t.app).get('/readyz');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, { success: true, data: { status: 'ready', checks: { database: 'ok', redis: 'ok' } } });
  });

  test('/readyz: 503 in the envelope once a shutdown has begun', async () => {
    const app = createApp(t.deps);
    app.locals.draining = true;
    const res = await request(app).get('/readyz');
    assert.equal(res.status, 503);
    assert.equal(res.body.success, false);
    assert.equal(res.body.error.code, 'service_unavailable');
    assert.equal(res.body.error.details.reason, 'shutting_down');
    assert.equal((await request(app).get('/healthz')).status, 200, 'still alive while draining');
  });
});

describe('/metrics', () => {
  test('Prometheus text: requests by operationId (never the raw URL) and status, latency, queue depth, e-mails', async () => {
    const { key, brokerId } = await apiKey(t.prisma, { scopes: ['admin:full'], rateLimit: 1000 });
    await t.prisma.invoice.createMany({
      data: [
        { brokerId, number: 'M-1', serviceNumber: 100000001, amount: '10.00', currency: 'EUR', status: 'paid', date: new Date('2025-05-02T00:00:00Z') },
        { brokerId, number: 'M-2', serviceNumber: 100000002, amount: '12.00', currency: 'EUR', status: 'pending', date: new Date('2025-05-03T00:00:00Z') },
      ],
    });
    const auth = { Authorization: `Bearer ${key}` };
    assert.equal((await request(t.app).get('/api/v1/auth-check').set(auth)).status, 200);
    assert.equal((await request(t.app).get('/api/v1/services/987654321').set(auth)).status, 404);
    assert.equal((await request(t.app).get('/api/v1/no/such/thing-424242').set(auth)).status, 404);
    const report = await request(t.app)
      .post('/api/v1/reports/invoices')
      .set(auth)
      .send({ recipients: ['a@example.com', 'b@example.com'], start_date: '2025-05-01', end_date: '2025-05-31' });
    assert.equal(report.status, 200, JSON.stringify(report.body));
    assert.equal(report.body.data.recipients_sent, 2);

    const res = await request(t.app).get('/metrics');
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type'] ?? '', /^text\/plain; version=0\.0\.4/);
    const text = res.text;
    assert.match(text, /^http_requests_total\{route="getAuthCheck",method="GET",status="200"\} [1-9]/m);
    assert.match(text, /^http_requests_total\{route="getService",method="GET",status="404"\} [1-9]/m);
    assert.match(text, /^http_requests_total\{route="unmatched",method="GET",status="404"\} [1-9]/m);
    assert.match(text, /^http_requests_total\{route="sendInvoicesReport",method="POST",status="200"\} [1-9]/m);
    assert.match(text, /^http_request_duration_seconds_bucket\{le="0\.1",route="getAuthCheck",method="GET"\} \d+/m);
    assert.match(text, /^http_request_duration_seconds_count\{route="sendInvoicesReport",method="POST"\} [1-9]/m);
    assert.doesNotMatch(text, /987654321|424242/, 'no raw URL in a label');
    assert.match(text, /^bullmq_queue_jobs\{queue="reports",state="waiting"\} \d+/m);
    assert.match(text, /^bullmq_queue_jobs\{queue="mail",state="active"\} \d+/m);
    assert.match(text, /^emails_sent_total\{kind="report"\} ([2-9]|\d\d+)/m);
    assert.match(text, /^# TYPE emails_failed_total counter/m);
    assert.match(text, /^process_cpu_seconds_total /m);
  });
});

describe('logs', () => {
  test('JSON lines with the request id; the Authorization header and any key never appear', async () => {
    const capture = new LogCapture();
    const logger = createLogger('trace', capture);
    const gate = createGate({ prisma: t.prisma, redis: t.deps.redis, logger });
    const app = createApp({ ...t.deps, logger, gate: gate.gate });
    const valid = await apiKey(t.prisma, { scopes: ['services:read'] });
    const revoked = await apiKey(t.prisma, { active: false });
    const unknown = generateApiKey('live').key;
    const secrets = [valid.key, revoked.key, unknown];

    const sent: string[] = [];
    const send = async (path: string, headers: Record<string, string>) => {
      const id = `ops-log-${sent.length}`;
      sent.push(id);
      return request(app).get(path).set({ ...headers, 'X-Request-Id': id });
    };
    assert.equal((await send('/api/v1/auth-check', { Authorization: `Bearer ${valid.key}` })).status, 200);
    assert.equal((await send('/api/v1/auth-check', { Authorization: `Bearer ${revoked.key}` })).status, 401);
    assert.equal((await send('/api/v1/auth-check', { Authorization: `Bearer ${unknown}` })).status, 401);
    assert.equal((await send('/api/v1/auth-check', { Authorization: valid.key })).status, 401);
    await send(`/api/v1/auth-check?api_key=${valid.key}`, { Authorization: `Bearer ${valid.key}` });
    await send('/api/v1/auth-check', { 'X-Api-Key': valid.key });
    // Encoded forms of the same key (the security probe's findings).
    await send(`/api/v1/auth-check?api_key=${valid.key.replace(/_/g, '%5F')}`, { Authorization: `Bearer ${valid.key}` });
    await send(`/api/v1/auth-check?api_key=_${valid.key}`, { Authorization: `Bearer ${valid.key}` });
    await send(`/api/v1/auth-check?k=${encodeURIComponent(encodeURIComponent(valid.key))}`, { Authorization: `Bearer ${valid.key}` });
    // Issue 21 row 10: base64 and base64url of the key, in an unknown parameter and in a known one.
    const b64 = Buffer.from(valid.key).toString('base64');
    const b64url = Buffer.from(`x${valid.key}`).toString('base64url');
    await send(`/api/v1/auth-check?token=${encodeURIComponent(b64)}`, { Authorization: `Bearer ${valid.key}` });
    await send(`/api/v1/services?limit=25&search=${b64url}&t=${b64url}`, { Authorization: `Bearer ${valid.key}` });
    await send(`/api/v1/services?limit=25&search=web01&status=active`, { Authorization: `Bearer ${valid.key}` });
    // The same URLs again: the request log remembers the URLs it leaves as they are, never one it scrubbed.
    await send(`/api/v1/services?limit=25&search=${b64url}&t=${b64url}`, { Authorization: `Bearer ${valid.key}` });
    await send(`/api/v1/services?limit=25&search=web01&status=active`, { Authorization: `Bearer ${valid.key}` });
    await gate.apiLog.close();
    await sleep(50);

    const text = capture.text();
    for (const secret of secrets) {
      // The 32 random characters are the secret; the sk_live_ prefix alone is harmless.
      assert.equal(text.includes(secret.slice(8)), false, 'a key reached the logs');
    }
    for (const encoded of [b64, encodeURIComponent(b64), b64url]) assert.equal(text.includes(encoded), false, `an encoded key reached the logs: ${encoded}`);
    assert.doesNotMatch(text, /Bearer sk_|authorization":"[^[]/i);
    const records = capture.records();
    for (const id of sent) {
      const line = records.find((r) => r.requestId === id && r.msg === 'request completed');
      assert.ok(line, `a request log line for ${id}`);
      assert.equal(typeof line.time, 'string');
      assert.equal(typeof line.level, 'number');
    }
    // An unknown parameter's value is left out; the operation's own parameters stay readable.
    const withQuery = records.find((r) => r.requestId === sent[4]);
    assert.match(JSON.stringify(withQuery), /api_key=\[redacted\]/);
    const url = (i: number) => (records.find((r) => r.requestId === sent[i]) as { req: { url: string } }).req.url;
    assert.equal(url(sent.length - 5), '/api/v1/auth-check?token=[redacted]');
    assert.equal(url(sent.length - 4), '/api/v1/services?limit=25&search=[redacted]&t=[redacted]');
    assert.equal(url(sent.length - 3), '/api/v1/services?limit=25&search=web01&status=active');
    assert.equal(url(sent.length - 2), '/api/v1/services?limit=25&search=[redacted]&t=[redacted]');
    assert.equal(url(sent.length - 1), '/api/v1/services?limit=25&search=web01&status=active');
  });
});
