/**
 * A console session's end and its cookie's safety (issue 48 item 3): sign out and the idle timeout
 * end it on the server; over HTTPS (a TLS socket, a proxy's header with TRUST_PROXY, or an
 * `https:` PUBLIC_BASE_URL) only the `__Host-` cookie is set and read; the key's IP whitelist and
 * expiry hold for the link, the start page and the shell; unknown cookies and link tokens are
 * remembered and bounded per IP.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import type { PrismaClient } from '../../generated/prisma/client.ts';
import { appLoaded, createApp } from '../../src/app.ts';
import { csrfTokenOf } from '../../src/auth/console-sessions.ts';
import { createGate, gateSettings, type GateDeps } from '../../src/auth/gate.ts';
import type { Config } from '../../src/config.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { consoleLink, tokenOf } from '../helpers/console.ts';
import { apiKey, brokerWithKeys, type BrokerWithKeys } from '../helpers/factories.ts';
import { makeCertificate } from '../ops/helpers.ts';

let t: TestApp;
let a: BrokerWithKeys;
const closers: Array<() => Promise<void>> = [];

before(async () => {
  t = await createTestApp();
  a = await brokerWithKeys(t.prisma);
});
after(async () => {
  for (const close of closers) await close();
  await t?.close();
});

/** Counts the console's look-ups of session cookies and link tokens. */
function countingPrisma(prisma: PrismaClient) {
  const calls = { cookies: 0, links: 0 };
  const sessions = new Proxy(prisma.consoleSession, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop !== 'findUnique' && prop !== 'findFirst') return value;
      return (...args: unknown[]) => {
        calls[prop === 'findUnique' ? 'cookies' : 'links'] += 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const counted = new Proxy(prisma, { get: (target, prop, receiver) => (prop === 'consoleSession' ? sessions : Reflect.get(target, prop, receiver)) });
  return { prisma: counted, calls };
}

/** Another app on the test's database and Redis, with its own configuration and gate (as another server would be). */
async function variant(overrides: Partial<Config> = {}, gateDeps: Partial<GateDeps> = {}): Promise<{ app: Express; calls: { cookies: number; links: number }; unknown: () => number }> {
  const config = { ...t.deps.config, ...overrides };
  const counting = countingPrisma(t.prisma);
  const gate = createGate({ prisma: counting.prisma, redis: t.deps.redis, logger: t.deps.logger, ...gateSettings(config), ...gateDeps });
  closers.push(() => gate.apiLog.close());
  const app = createApp({ ...t.deps, prisma: counting.prisma, config, gate: gate.gate, consoleSessions: gate.consoleSessions });
  await appLoaded(app);
  return { app, calls: counting.calls, unknown: () => gate.consoleSessions.unknownCount };
}

const setCookieOf = (res: request.Response): string => ([] as string[]).concat(res.headers['set-cookie'] ?? [])[0] ?? '';

/** Follows a link on `app` as a browser would (the link is made on `app` too) and answers the Set-Cookie. */
async function start(app: Express, key: string, headers: Record<string, string> = {}): Promise<request.Response> {
  const token = tokenOf(await consoleLink(app, key));
  return request(app).post('/console/start').set({ 'Sec-Fetch-Site': 'same-origin', ...headers }).type('form').send({ token });
}

const pairOf = (setCookie: string) => setCookie.split(';')[0]!;
const valueOf = (pair: string) => pair.slice(pair.indexOf('=') + 1);

describe('the cookie over HTTPS', () => {
  test('on a TLS socket it is __Host-, Secure; a cookie without the prefix is not read', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'console-tls-'));
    try {
      const { cert, key } = await makeCertificate(dir);
      const ca = readFileSync(cert);
      const server = https.createServer({ cert: readFileSync(cert), key: readFileSync(key) }, t.app);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
        const link = await request(origin).post('/api/v1/console-sessions').ca(ca).set('Authorization', `Bearer ${a.live.key}`);
        assert.equal(link.status, 200, JSON.stringify(link.body));
        const started = await request(origin).post('/console/start').ca(ca).set('Sec-Fetch-Site', 'same-origin').type('form').send({ token: tokenOf(link.body.data.url) });
        assert.equal(started.status, 303, started.text);
        const setCookie = setCookieOf(started);
        assert.match(setCookie, /^__Host-console_session=[\w-]+;/);
        assert.match(setCookie, /; Secure/);
        assert.match(setCookie, /; Path=\//);
        const value = valueOf(pairOf(setCookie));
        const withPrefix = await request(origin).get('/api/v1/auth-check').ca(ca).set('Cookie', `__Host-console_session=${value}`);
        assert.equal(withPrefix.status, 200, JSON.stringify(withPrefix.body));
        // What a sibling subdomain could plant: the same value without the prefix is no session over HTTPS.
        const planted = await request(origin).get('/api/v1/auth-check').ca(ca).set('Cookie', `console_session=${value}`);
        assert.equal(planted.status, 401);
        assert.match(planted.body.error.message, /Missing API key/);
        const shell = await request(origin).get('/console/').ca(ca).set('Cookie', `console_session=${value}`);
        assert.equal(shell.status, 401);
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('behind a TLS proxy: X-Forwarded-Proto counts only with TRUST_PROXY', async () => {
    const untrusted = await variant({ trustProxy: false });
    const plain = setCookieOf(await start(untrusted.app, a.live.key, { 'X-Forwarded-Proto': 'https' }));
    assert.match(plain, /^console_session=/, 'without TRUST_PROXY the header is anyone\'s: plain HTTP');
    assert.doesNotMatch(plain, /Secure/);

    const trusted = await variant({ trustProxy: 'loopback' });
    const secure = setCookieOf(await start(trusted.app, a.live.key, { 'X-Forwarded-Proto': 'https' }));
    assert.match(secure, /^__Host-console_session=/);
    assert.match(secure, /; Secure/);
    const value = valueOf(pairOf(secure));
    const call = (cookie: string) => request(trusted.app).get('/api/v1/auth-check').set('X-Forwarded-Proto', 'https').set('Cookie', cookie);
    assert.equal((await call(`__Host-console_session=${value}`)).status, 200);
    assert.equal((await call(`console_session=${value}`)).status, 401);
  });

  test('an https: PUBLIC_BASE_URL makes it Secure without TRUST_PROXY', async () => {
    const behind = await variant({ trustProxy: false, publicBaseUrl: 'https://capi.example' });
    const res = await start(behind.app, a.live.key);
    const setCookie = setCookieOf(res);
    assert.match(setCookie, /^__Host-console_session=/);
    assert.match(setCookie, /; Secure/);
    const value = valueOf(pairOf(setCookie));
    assert.equal((await request(behind.app).get('/api/v1/auth-check').set('Cookie', `__Host-console_session=${value}`)).status, 200);
    assert.equal((await request(behind.app).get('/api/v1/auth-check').set('Cookie', `console_session=${value}`)).status, 401);
    // A browser's form from the proxy's origin, without Fetch Metadata, is the console's own.
    const token = tokenOf(await consoleLink(behind.app, a.live.key));
    const fromProxy = await request(behind.app).post('/console/start').set('Origin', 'https://capi.example').type('form').send({ token });
    assert.equal(fromProxy.status, 303);
  });
});

describe('sign out', () => {
  test('ends the session on the server: its cookie then gets 401, and the browser is told to drop it', async () => {
    const pair = pairOf(setCookieOf(await start(t.app, a.live.key)));
    const csrf = csrfTokenOf(valueOf(pair));
    assert.equal((await request(t.app).get('/api/v1/auth-check').set('Cookie', pair)).status, 200);
    const out = await request(t.app).post('/console/sign-out').set('Cookie', pair).set('Sec-Fetch-Site', 'same-origin').type('form').send({ csrf_token: csrf });
    assert.equal(out.status, 200, out.text);
    assert.match(out.text, /<h1>Signed out<\/h1>/);
    assert.match(out.text, /console-style\.css/);
    assert.match(setCookieOf(out), /^console_session=; Max-Age=0;/);
    const after = await request(t.app).get('/api/v1/auth-check').set('Cookie', pair);
    assert.equal(after.status, 401);
    assert.match(after.body.error.message, /signed out/);
    assert.equal((await request(t.app).get('/console/').set('Cookie', pair)).status, 401);
    // On another process too: the end is in the database, not in this one's memory.
    const other = await t.another();
    assert.equal((await request(other).get('/api/v1/auth-check').set('Cookie', pair)).status, 401);
  });

  test('without the CSRF token, or from another site, the session goes on', async () => {
    const pair = pairOf(setCookieOf(await start(t.app, a.live.key)));
    const csrf = csrfTokenOf(valueOf(pair));
    const none = await request(t.app).post('/console/sign-out').set('Cookie', pair).set('Sec-Fetch-Site', 'same-origin').type('form').send({});
    assert.equal(none.status, 403);
    assert.equal(none.headers['set-cookie'], undefined);
    const crossSite = await request(t.app).post('/console/sign-out').set('Cookie', pair).set('Sec-Fetch-Site', 'cross-site').type('form').send({ csrf_token: csrf });
    assert.equal(crossSite.status, 403);
    assert.equal((await request(t.app).get('/api/v1/auth-check').set('Cookie', pair)).status, 200);
  });
});

describe('the idle timeout and the hour (an injected clock)', () => {
  test('30 minutes without a call end the session; each call moves that end, up to the hour', async () => {
    let now = Date.parse('2026-12-02T08:00:00Z');
    const { app } = await variant({}, { now: () => new Date(now) });
    const call = (pair: string) => request(app).get('/api/v1/auth-check').set('Cookie', pair);
    const busy = pairOf(setCookieOf(await start(app, a.live.key)));
    const idle = pairOf(setCookieOf(await start(app, a.live.key)));

    now += 29 * 60_000;
    assert.equal((await call(busy)).status, 200);
    now += 29 * 60_000; // 58 minutes after the start, 29 after the last call
    assert.equal((await call(busy)).status, 200);
    assert.equal((await request(app).get('/console/').set('Cookie', busy)).status, 200);
    const idleAnswer = await call(idle);
    assert.equal(idleAnswer.status, 401);
    assert.match(idleAnswer.body.error.message, /30 minutes without use/);
    assert.equal((await request(app).get('/console/').set('Cookie', idle)).status, 401);

    now += 2 * 60_000; // 60 minutes after the start: the hour is over, however busy
    const hour = await call(busy);
    assert.equal(hour.status, 401);
    assert.match(hour.body.error.message, /lasts an hour/);
  });
});

describe("the key's IP whitelist and validity hold for the link, the start page and the shell", () => {
  test('a whitelisted key\'s link from another address is refused, and used up by nothing', async () => {
    const { app } = await variant({ trustProxy: 'loopback' });
    const key = await apiKey(t.prisma, { brokerId: a.brokerId, ipWhitelist: ['10.0.0.1/32'] });
    const url = await request(app).post('/api/v1/console-sessions').set('Authorization', `Bearer ${key.key}`).set('X-Forwarded-For', '10.0.0.1');
    assert.equal(url.status, 200, JSON.stringify(url.body));
    const token = tokenOf(url.body.data.url);
    const from = (ip: string) => ({ 'X-Forwarded-For': ip });

    const page = await request(app).get(`/console/start?token=${token}`).set(from('10.0.0.2'));
    assert.equal(page.status, 403);
    assert.doesNotMatch(page.text, /<form|Open the console|csrf/);
    assert.match(page.text, /10\.0\.0\.2/);
    const post = await request(app).post('/console/start').set({ 'Sec-Fetch-Site': 'same-origin', ...from('10.0.0.2') }).type('form').send({ token });
    assert.equal(post.status, 403);
    assert.equal(post.headers['set-cookie'], undefined);

    assert.equal((await request(app).get(`/console/start?token=${token}`).set(from('10.0.0.1'))).status, 200);
    const started = await request(app).post('/console/start').set({ 'Sec-Fetch-Site': 'same-origin', ...from('10.0.0.1') }).type('form').send({ token });
    assert.equal(started.status, 303);
    const pair = pairOf(setCookieOf(started));
    const shell = await request(app).get('/console/').set({ Cookie: pair, ...from('10.0.0.2') });
    assert.equal(shell.status, 403);
    assert.doesNotMatch(shell.text, /csrf-token|console-broker/);
    assert.equal((await request(app).get('/console/').set({ Cookie: pair, ...from('10.0.0.1') })).status, 200);
    assert.equal((await request(app).get('/api/v1/auth-check').set({ Cookie: pair, ...from('10.0.0.2') })).status, 403);
  });

  test('a link of a key expired or revoked since shows the refused page, in the console\'s style', async () => {
    for (const change of [{ expiresAt: new Date(Date.now() - 1000) }, { active: false, revokedAt: new Date() }]) {
      const key = await apiKey(t.prisma, { brokerId: a.brokerId });
      const url = await consoleLink(t.app, key.key);
      await t.prisma.apiKey.update({ where: { id: key.id }, data: change });
      const page = await request(t.app).get(new URL(url).pathname + new URL(url).search);
      assert.equal(page.status, 401, JSON.stringify(change));
      assert.match(page.text, /<h1>This console link does not work<\/h1>/);
      assert.doesNotMatch(page.text, /Open the console/);
      assert.match(page.text, /<link rel="stylesheet" href="\/console\/assets\/console-style\.css">/);
      assert.match(page.text, /<main id="main" class="refused">/);
    }
  });
});

describe('unknown cookies and link tokens', () => {
  test('are looked up once, then remembered', async () => {
    const { app, calls } = await variant();
    for (let i = 0; i < 5; i++) {
      const res = await request(app).get('/api/v1/auth-check').set('Cookie', 'console_session=made-up');
      assert.equal(res.status, 401);
    }
    assert.equal((await request(app).get('/console/').set('Cookie', 'console_session=made-up')).status, 401);
    assert.equal(calls.cookies, 1, 'one look-up for six requests of one made-up cookie');
    const token = `cst_${'B'.repeat(43)}`;
    for (let i = 0; i < 3; i++) assert.equal((await request(app).get(`/console/start?token=${token}`)).status, 401);
    assert.equal(calls.links, 1);
  });

  test('are remembered up to a bound, the oldest forgotten first', async () => {
    const { app, calls, unknown } = await variant({}, { console: { unknownSize: 3 } });
    for (let i = 0; i < 5; i++) await request(app).get('/api/v1/auth-check').set('Cookie', `console_session=forgotten-${i}`);
    assert.equal(unknown(), 3);
    await request(app).get('/api/v1/auth-check').set('Cookie', 'console_session=forgotten-4');
    assert.equal(calls.cookies, 5, 'the newest is still remembered');
    await request(app).get('/api/v1/auth-check').set('Cookie', 'console_session=forgotten-0');
    assert.equal(calls.cookies, 6, 'the oldest was forgotten, and is looked up again');
  });

  test('count against a per-IP bound: past it, 429 without a look-up', async () => {
    const { app, calls } = await variant({}, { console: { failuresPerIpPerMinute: 4 } });
    for (let i = 0; i < 4; i++) assert.equal((await request(app).get('/api/v1/auth-check').set('Cookie', `console_session=made-up-${i}`)).status, 401);
    assert.equal(calls.cookies, 4);
    const over = await request(app).get('/api/v1/auth-check').set('Cookie', 'console_session=made-up-5');
    assert.equal(over.status, 429);
    assert.equal(over.body.error.code, 'rate_limit_exceeded');
    assert.equal(over.body.error.details.reason, 'auth_failures_per_ip');
    assert.ok(Number(over.headers['retry-after']) >= 1);
    const link = await request(app).get(`/console/start?token=cst_${'C'.repeat(43)}`);
    assert.equal(link.status, 429);
    assert.match(link.text, /Too many attempts/);
    assert.equal(calls.cookies, 4, 'no look-up past the bound');
    assert.equal(calls.links, 0);
    // A key is not a console credential: it still passes.
    assert.equal((await request(app).get('/api/v1/auth-check').set('Authorization', `Bearer ${a.live.key}`)).status, 200);
  });
});
