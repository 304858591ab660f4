import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { csrfTokenOf } from '../../src/auth/console-sessions.ts';
import { consoleLink as cliConsoleLink } from '../../src/cli/console.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { consoleLink, openConsole, startForm, tokenOf } from '../helpers/console.ts';
import { eventually } from '../helpers/eventually.ts';
import { apiKey, broker, brokerWithKeys, type BrokerWithKeys } from '../helpers/factories.ts';

let t: TestApp;
let a: BrokerWithKeys;
let b: BrokerWithKeys;

before(async () => {
  t = await createTestApp({ publicBaseUrl: 'https://capi.example' });
  a = await brokerWithKeys(t.prisma);
  b = await brokerWithKeys(t.prisma);
});
after(async () => {
  await t?.close();
});

const open = (key: string) => openConsole(t.app, key, csrfTokenOf);
const withCookie = (cookie: string, method: 'get' | 'post', path: string) => request(t.app)[method](path).set('Cookie', cookie);

describe('createConsoleSession', () => {
  test('answers a single-use link under PUBLIC_BASE_URL, valid 10 minutes', async () => {
    const before = Date.now();
    const res = await request(t.app).post('/api/v1/console-sessions').set('Authorization', `Bearer ${a.live.key}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(Object.keys(res.body.data).sort(), ['expires_at', 'object', 'url']);
    assert.equal(res.body.data.object, 'console_session');
    assert.match(res.body.data.url, /^https:\/\/capi\.example\/console\/start\?token=cst_[A-Za-z0-9_-]{43}$/);
    const ttl = Date.parse(res.body.data.expires_at) - before;
    assert.ok(ttl > 9.9 * 60_000 && ttl <= 10 * 60_000 + 5_000, String(ttl));
    const row = await t.prisma.consoleSession.findFirstOrThrow({ where: { apiKeyId: a.live.id }, orderBy: { createdAt: 'desc' } });
    assert.notEqual(row.startTokenHash, tokenOf(res.body.data.url), 'only the hash of the token is stored');
  });

  test('needs admin:full', async () => {
    const reader = await apiKey(t.prisma, { brokerId: a.brokerId, scopes: ['services:read'] });
    const res = await request(t.app).post('/api/v1/console-sessions').set('Authorization', `Bearer ${reader.key}`);
    assert.equal(res.status, 403);
    assert.equal(res.body.error.code, 'insufficient_permissions');
  });

  test('a console session cannot open another one', async () => {
    const s = await open(a.live.key);
    const res = await withCookie(s.cookie, 'post', '/api/v1/console-sessions').set('X-CSRF-Token', s.csrf);
    assert.equal(res.status, 403);
    assert.equal(res.body.error.details.reason, 'console_session');
  });
});

describe('opening a link', () => {
  test('its page holds a form that posts the token, and uses nothing up', async () => {
    const url = await consoleLink(t.app, a.live.key);
    const page = await request(t.app).get(new URL(url).pathname + new URL(url).search);
    assert.equal(page.status, 200);
    assert.match(page.headers['content-security-policy'] ?? '', /script-src 'self'/);
    assert.match(page.text, /<form method="post" action="\/console\/start"/);
    assert.ok(page.text.includes(tokenOf(url)));
    // Fetched twice (a link preview, then the person): still opens.
    assert.equal((await request(t.app).get(new URL(url).pathname + new URL(url).search)).status, 200);
    assert.equal((await startForm(t.app, tokenOf(url))).status, 303);
  });

  test('sets an HttpOnly, SameSite=Strict cookie for an hour, once', async () => {
    const token = tokenOf(await consoleLink(t.app, a.live.key));
    const first = await startForm(t.app, token);
    assert.equal(first.status, 303);
    assert.equal(first.headers.location, '/console/');
    const cookie = String(first.headers['set-cookie']);
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Strict/);
    assert.match(cookie, /Path=\//);
    assert.match(cookie, /Max-Age=3600/);
    const second = await startForm(t.app, token);
    assert.equal(second.status, 401, 'a link works once');
    assert.equal(second.headers['set-cookie'], undefined);
    const page = await request(t.app).get(`/console/start?token=${token}`);
    assert.equal(page.status, 401);
  });

  test('an expired, unknown or malformed token, or a key revoked since, opens nothing', async () => {
    const token = tokenOf(await consoleLink(t.app, a.live.key));
    await t.prisma.consoleSession.updateMany({ where: { startedAt: null, apiKeyId: a.live.id }, data: { linkExpiresAt: new Date(Date.now() - 1) } });
    assert.equal((await startForm(t.app, token)).status, 401);
    assert.equal((await startForm(t.app, `cst_${'A'.repeat(43)}`)).status, 401);
    assert.equal((await startForm(t.app, 'nonsense')).status, 401);
    const doomed = await apiKey(t.prisma, { brokerId: a.brokerId, scopes: ['admin:full'] });
    const doomedToken = tokenOf(await consoleLink(t.app, doomed.key));
    await t.prisma.apiKey.update({ where: { id: doomed.id }, data: { active: false, revokedAt: new Date() } });
    assert.equal((await startForm(t.app, doomedToken)).status, 401);
  });

  test('a form posted from another site starts nothing (login CSRF)', async () => {
    const token = tokenOf(await consoleLink(t.app, a.live.key));
    const res = await request(t.app).post('/console/start').set('Sec-Fetch-Site', 'cross-site').type('form').send({ token });
    assert.equal(res.status, 401);
    assert.equal((await startForm(t.app, token)).status, 303, 'the refused post used nothing up');
  });
});

describe('calls with the session', () => {
  test('act with the key\'s broker, mode and scopes, and are logged as the console\'s', async () => {
    const live = await open(a.live.key);
    const check = await withCookie(live.cookie, 'get', '/api/v1/auth-check').set('X-Request-Id', 'console-call-1');
    assert.equal(check.status, 200, JSON.stringify(check.body));
    assert.equal(check.body.data.key_id, a.live.id);
    assert.equal(check.body.data.mode, 'live');
    assert.equal(check.headers['x-ratelimit-limit'], '100000', 'counted against the key');
    const test = await open(a.sandbox.key);
    assert.equal((await withCookie(test.cookie, 'get', '/api/v1/auth-check')).body.data.mode, 'test');

    await t.flushApiLog();
    const log = await request(t.app).get('/api/v1/request-logs/console-call-1').set('Authorization', `Bearer ${a.live.key}`);
    assert.equal(log.status, 200, JSON.stringify(log.body));
    assert.equal(log.body.data.source, 'console');
    await t.flushApiLog();
    const own = await request(t.app).get(`/api/v1/request-logs/${log.headers['x-request-id']}`).set('Authorization', `Bearer ${a.live.key}`);
    assert.equal(own.body.data.source, 'api');
  });

  test('another broker\'s session sees none of this broker\'s data', async () => {
    const ids = (await t.prisma.apiKey.findMany({ where: { brokerId: a.brokerId }, select: { id: true } })).map((k) => k.id);
    const other = await open(b.live.key);
    const logs = await withCookie(other.cookie, 'get', '/api/v1/request-logs?limit=100');
    assert.equal(logs.status, 200);
    assert.ok(logs.body.data.every((e: { api_key_id: string }) => !ids.includes(e.api_key_id)));
    const endpoints = await withCookie(other.cookie, 'get', '/api/v1/webhook-endpoints');
    assert.equal(endpoints.status, 200);
  });

  test('a change needs the CSRF token, and a same-origin request', async () => {
    const s = await open(a.live.key);
    const none = await withCookie(s.cookie, 'post', '/api/v1/auth-check');
    assert.equal(none.status, 403);
    assert.equal(none.body.error.code, 'insufficient_permissions');
    assert.equal(none.body.error.details.reason, 'csrf_token');
    const wrong = await withCookie(s.cookie, 'post', '/api/v1/auth-check').set('X-CSRF-Token', csrfTokenOf('another cookie'));
    assert.equal(wrong.status, 403);
    const crossSite = await withCookie(s.cookie, 'post', '/api/v1/auth-check').set('X-CSRF-Token', s.csrf).set('Sec-Fetch-Site', 'cross-site');
    assert.equal(crossSite.status, 403);
    const ok = await withCookie(s.cookie, 'post', '/api/v1/auth-check').set('X-CSRF-Token', s.csrf).set('Sec-Fetch-Site', 'same-origin');
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
  });

  test('the key itself wins over a cookie, and an unknown cookie is a 401', async () => {
    const s = await open(b.live.key);
    const res = await withCookie(s.cookie, 'get', '/api/v1/auth-check').set('Authorization', `Bearer ${a.live.key}`);
    assert.equal(res.body.data.key_id, a.live.id);
    const unknown = await withCookie('__Host-console_session=forged', 'get', '/api/v1/auth-check');
    assert.equal(unknown.status, 401);
    assert.equal(unknown.body.error.code, 'authentication_failed');
    assert.match(unknown.body.error.message, /Invalid console session/, 'read as the (HTTPS) console cookie');
  });

  test('the session ends after its hour', async () => {
    const s = await open(a.live.key);
    assert.equal((await withCookie(s.cookie, 'get', '/api/v1/auth-check')).status, 200);
    await t.prisma.consoleSession.updateMany({ where: { apiKeyId: a.live.id, startedAt: { not: null } }, data: { expiresAt: new Date(Date.now() - 1) } });
    const res = await withCookie(s.cookie, 'get', '/api/v1/auth-check');
    assert.equal(res.status, 401);
    assert.match(res.body.error.message, /expired/);
  });

  test('the session ends when its key is revoked', async () => {
    const key = await apiKey(t.prisma, { brokerId: a.brokerId, scopes: ['admin:full'] });
    const s = await open(key.key);
    assert.equal((await withCookie(s.cookie, 'get', '/api/v1/auth-check')).status, 200);
    await t.prisma.apiKey.update({ where: { id: key.id }, data: { active: false, revokedAt: new Date() } });
    // A revoked key's cached row lives 2 s (the gate's key cache).
    await eventually(async () => ((await withCookie(s.cookie, 'get', '/api/v1/auth-check')).status === 401 ? true : undefined), 10_000, 'the revoked key\'s session to be refused');
  });
});

describe('npm run cli -- console', () => {
  test('prints a link for the broker\'s newest admin:full key of the mode, which opens its console', async () => {
    const { slug } = await t.prisma.broker.findUniqueOrThrow({ where: { id: a.brokerId } });
    const newest = await apiKey(t.prisma, { brokerId: a.brokerId, mode: 'test', scopes: ['admin:full'] });
    const printed = await cliConsoleLink(t.prisma, { publicBaseUrl: 'https://capi.example' }, { brokerSlug: slug, mode: 'test', keyId: undefined });
    assert.equal(printed.key_id, newest.id);
    assert.equal(printed.mode, 'test');
    assert.match(printed.url, /^https:\/\/capi\.example\/console\/start\?token=cst_/);
    const started = await startForm(t.app, tokenOf(printed.url));
    assert.equal(started.status, 303);
    const cookie = String(started.headers['set-cookie']?.[0]).split(';')[0]!;
    assert.equal((await withCookie(cookie, 'get', '/api/v1/auth-check')).body.data.key_id, newest.id);
  });

  test('refuses a broker with no valid admin:full key of the mode, naming how to make one', async () => {
    const other = await broker(t.prisma, { slug: 'no-keys-console' });
    await apiKey(t.prisma, { brokerId: other.id, mode: 'live', scopes: ['services:read'] });
    await assert.rejects(cliConsoleLink(t.prisma, { publicBaseUrl: 'https://capi.example' }, { brokerSlug: other.slug, mode: 'live', keyId: undefined }), /keys create --broker no-keys-console --mode live --scopes admin:full/);
  });
});
