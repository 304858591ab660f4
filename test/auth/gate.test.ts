import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { createApp } from '../../src/app.ts';
import { createGate } from '../../src/auth/gate.ts';
import { generateApiKey } from '../../src/auth/keys.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { assertError } from '../helpers/answers.ts';
import { apiKey, broker } from '../helpers/factories.ts';

let t: TestApp;
/** The same app with `trust proxy` set to loopback (TRUST_PROXY=loopback), on the same database. */
let proxied: Express;

before(async () => {
  t = await createTestApp();
  proxied = createApp({ ...t.deps, config: { ...t.deps.config, trustProxy: 'loopback' } });
});
after(async () => {
  await t?.close();
});

const authCheck = (app: Express, authorization?: string, headers: Record<string, string> = {}) => {
  const req = request(app).get('/api/v1/auth-check');
  if (authorization !== undefined) req.set('Authorization', authorization);
  for (const [name, value] of Object.entries(headers)) req.set(name, value);
  return req;
};

function assertNoRateLimitHeaders(res: request.Response): void {
  for (const h of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit', 'ratelimit-policy']) {
    assert.equal(res.headers[h], undefined, `${h} on an unauthenticated response`);
  }
}

describe('authentication (401 authentication_failed)', () => {
  test('missing Authorization header', async () => {
    const res = await authCheck(t.app);
    assertError(res, 401, 'authentication_failed');
    assert.match(res.headers['www-authenticate'] ?? '', /^Bearer/);
    assertNoRateLimitHeaders(res);
  });

  test('malformed Authorization header', async () => {
    const { key } = await apiKey(t.prisma);
    for (const header of [`Basic ${key}`, 'Bearer', `Bearer ${key} extra`, key, `Token ${key}`, ' ']) {
      const res = await authCheck(t.app, header);
      assertError(res, 401, 'authentication_failed');
    }
  });

  test('malformed key', async () => {
    const { key } = await apiKey(t.prisma);
    for (const token of ['sk_live_short', key.replace('sk_live_', 'sk_prod_'), `${key}x`, key.slice(0, -1) + '!', 'x'.repeat(40)]) {
      const res = await authCheck(t.app, `Bearer ${token}`);
      assertError(res, 401, 'authentication_failed');
    }
  });

  test('unknown key (well formed, never issued)', async () => {
    const res = await authCheck(t.app, `Bearer ${generateApiKey('live').key}`);
    assertError(res, 401, 'authentication_failed');
    assertNoRateLimitHeaders(res);
  });

  test('revoked (inactive) key', async () => {
    const { key } = await apiKey(t.prisma, { active: false });
    const res = await authCheck(t.app, `Bearer ${key}`);
    assertError(res, 401, 'authentication_failed');
  });

  test('expired key', async () => {
    const { key } = await apiKey(t.prisma, { expiresAt: new Date(Date.now() - 1000) });
    const res = await authCheck(t.app, `Bearer ${key}`);
    assertError(res, 401, 'authentication_failed');
  });

  test('prefix and stored mode disagree (an sk_live_ key stored as a test key)', async () => {
    const { key } = await apiKey(t.prisma, { mode: 'live', storedMode: 'test' });
    const res = await authCheck(t.app, `Bearer ${key}`);
    assertError(res, 401, 'authentication_failed');
  });

  test('valid live key (scheme name is case-insensitive)', async () => {
    const b = await broker(t.prisma, { name: 'Acme Hosting' });
    const k = await apiKey(t.prisma, { brokerId: b.id, name: 'Billing', scopes: ['reports:generate'] });
    const res = await authCheck(t.app, `bearer ${k.key}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, {
      success: true,
      data: {
        object: 'auth_check',
        key_id: k.id,
        key_name: 'Billing',
        mode: 'live',
        scopes: ['reports:generate'],
        broker_id: b.id,
        broker_name: 'Acme Hosting',
      },
    });
  });

  test('valid sandbox key', async () => {
    const k = await apiKey(t.prisma, { mode: 'test', scopes: ['services:write'] });
    const res = await authCheck(t.app, `Bearer ${k.key}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.mode, 'test');
    assert.equal(res.body.data.key_id, k.id);
  });

  test('an expiry in the future is accepted, and a cached key still expires on time', async () => {
    const k = await apiKey(t.prisma, { expiresAt: new Date(Date.now() + 400) });
    assert.equal((await authCheck(t.app, `Bearer ${k.key}`)).status, 200);
    await new Promise((r) => setTimeout(r, 500));
    assertError(await authCheck(t.app, `Bearer ${k.key}`), 401, 'authentication_failed');
  });

  test('a key revoked while in use stops working within the key cache time', async () => {
    const gate = createGate({ prisma: t.prisma, redis: t.deps.redis, logger: t.deps.logger, keyCacheMs: 200 });
    const app = createApp({ ...t.deps, gate: gate.gate });
    const k = await apiKey(t.prisma);
    assert.equal((await authCheck(app, `Bearer ${k.key}`)).status, 200);
    await t.prisma.apiKey.update({ where: { id: k.id }, data: { active: false, revokedAt: new Date() } });
    await new Promise((r) => setTimeout(r, 250));
    assertError(await authCheck(app, `Bearer ${k.key}`), 401, 'authentication_failed');
    await gate.apiLog.close();
  });

  test('the key is never echoed back', async () => {
    const k = await apiKey(t.prisma, { mode: 'live', storedMode: 'test' });
    const res = await authCheck(t.app, `Bearer ${k.key}`);
    assert.ok(!res.text.includes(k.key.slice(8)));
  });
});

describe('IP whitelist (403 insufficient_permissions)', () => {
  // supertest connects over loopback: the socket peer is 127.0.0.1 (often as ::ffff:127.0.0.1).
  const fromLoopback = async (whitelist: string[], ipRestricted = true, mode: 'live' | 'test' = 'live') => {
    const k = await apiKey(t.prisma, { ipWhitelist: whitelist, ipRestricted, mode });
    return authCheck(t.app, `Bearer ${k.key}`);
  };
  const viaProxy = async (whitelist: string[], forwardedFor: string, app: Express = proxied) => {
    const k = await apiKey(t.prisma, { ipWhitelist: whitelist });
    return authCheck(app, `Bearer ${k.key}`, { 'X-Forwarded-For': forwardedFor });
  };

  test('exact IPv4 address', async () => {
    assert.equal((await fromLoopback(['127.0.0.1'])).status, 200);
    assert.equal((await viaProxy(['203.0.113.7'], '203.0.113.7')).status, 200);
  });

  test('IPv4 CIDR range', async () => {
    assert.equal((await fromLoopback(['127.0.0.0/8'])).status, 200);
    assert.equal((await viaProxy(['203.0.113.0/24'], '203.0.113.200')).status, 200);
  });

  test('IPv6 address', async () => {
    assert.equal((await viaProxy(['2001:db8::5'], '2001:db8:0:0::5')).status, 200);
  });

  test('IPv6 CIDR range', async () => {
    assert.equal((await viaProxy(['2001:db8:abcd::/48'], '2001:db8:abcd:1::9')).status, 200);
    assertError(await viaProxy(['2001:db8:abcd::/48'], '2001:db8:ffff::9'), 403, 'insufficient_permissions');
  });

  test('IPv4-mapped IPv6 caller against an IPv4 rule', async () => {
    assert.equal((await viaProxy(['198.51.100.0/24'], '::ffff:198.51.100.14')).status, 200);
  });

  test('an address not on the list is refused, with the rate-limit headers', async () => {
    const res = await fromLoopback(['203.0.113.0/24', '2001:db8::/32']);
    assertError(res, 403, 'insufficient_permissions');
    assert.equal(res.body.error.details.required_scopes, undefined);
    assert.ok(res.headers['x-ratelimit-limit']);
    assert.ok(res.headers['ratelimit']);
  });

  test('a restricted key with an empty whitelist is refused', async () => {
    assertError(await fromLoopback([], true), 403, 'insufficient_permissions');
  });

  test('a restricted sandbox key with an empty whitelist is refused', async () => {
    assertError(await fromLoopback([], true, 'test'), 403, 'insufficient_permissions');
  });

  test('a restricted sandbox key from an address not listed is refused', async () => {
    assertError(await fromLoopback(['203.0.113.1'], true, 'test'), 403, 'insufficient_permissions');
  });

  test('an unrestricted key with a whitelist on file is not checked', async () => {
    assert.equal((await fromLoopback(['203.0.113.1'], false)).status, 200);
  });

  test('X-Forwarded-For is ignored when TRUST_PROXY is unset', async () => {
    assert.equal(t.app.get('trust proxy fn')('127.0.0.1', 0), false);
    assertError(await viaProxy(['203.0.113.7'], '203.0.113.7', t.app), 403, 'insufficient_permissions');
    // ... and cannot be used to escape a whitelist that allows the real peer either way.
    assert.equal((await viaProxy(['127.0.0.1'], '203.0.113.9', t.app)).status, 200);
  });

  test('a forwarded address is parsed strictly: only a dotted quad or an IPv6 address is one', async () => {
    // Each names 10.0.0.1 to a lenient parser (octal, one number, hex, short form, IPv4-compatible IPv6).
    for (const forwarded of ['012.0.0.1', '167772161', '0xa000001', '10.1', '::10.0.0.1', '::ffff:012.0.0.1', '::ffff:0xa.0.0.1']) {
      const res = await viaProxy(['10.0.0.1'], forwarded);
      assertError(res, 403, 'insufficient_permissions');
      // Shown as sent, as it is not an address; ::10.0.0.1 is one (::a00:1), just not 10.0.0.1.
      assert.equal(res.body.error.details.ip, forwarded === '::10.0.0.1' ? '::a00:1' : forwarded);
    }
    assert.equal((await viaProxy(['10.0.0.1'], '10.0.0.1')).status, 200);
    assert.equal((await viaProxy(['10.0.0.1'], '::ffff:10.0.0.1')).status, 200);
  });

  test('X-Forwarded-For is honoured when TRUST_PROXY is set', async () => {
    assert.equal((await viaProxy(['203.0.113.7'], '203.0.113.7')).status, 200);
    assertError(await viaProxy(['127.0.0.1'], '203.0.113.9'), 403, 'insufficient_permissions');
    // Only the hop added by the trusted proxy counts, not what the client wrote before it.
    assertError(await viaProxy(['203.0.113.7'], '203.0.113.7, 198.51.100.1'), 403, 'insufficient_permissions');
  });
});

describe('order of checks', () => {
  test('unauthenticated from an address no key allows: 401, not 403', async () => {
    await apiKey(t.prisma, { ipWhitelist: ['203.0.113.7'] });
    assertError(await authCheck(proxied, undefined, { 'X-Forwarded-For': '198.51.100.1' }), 401, 'authentication_failed');
    assertError(
      await authCheck(proxied, `Bearer ${generateApiKey('test').key}`, { 'X-Forwarded-For': '198.51.100.1' }),
      401,
      'authentication_failed',
    );
  });

  test('bad IP with an exhausted limit: 403; a refused IP does not use up the limit', async () => {
    const k = await apiKey(t.prisma, { ipWhitelist: ['203.0.113.0/24'], rateLimit: 1 });
    const from = (ip: string) => authCheck(proxied, `Bearer ${k.key}`, { 'X-Forwarded-For': ip });
    assertError(await from('198.51.100.1'), 403, 'insufficient_permissions');
    assertError(await from('198.51.100.1'), 403, 'insufficient_permissions');
    const ok = await from('203.0.113.5');
    assert.equal(ok.status, 200);
    assertError(await from('203.0.113.5'), 429, 'rate_limit_exceeded');
    const refused = await from('198.51.100.1');
    assertError(refused, 403, 'insufficient_permissions');
    assert.equal(refused.headers['x-ratelimit-remaining'], '0');
  });

  test('exhausted limit and missing scope: 429', async () => {
    const k = await apiKey(t.prisma, { scopes: ['services:read'], rateLimit: 1 });
    assertError(
      await request(t.app).post('/api/v1/auth-check').set('Authorization', `Bearer ${k.key}`),
      403,
      'insufficient_permissions',
    );
    assertError(
      await request(t.app).post('/api/v1/auth-check').set('Authorization', `Bearer ${k.key}`),
      429,
      'rate_limit_exceeded',
    );
  });

  test('missing scope and an invalid body: 403 before validation', async () => {
    const k = await apiKey(t.prisma, { scopes: ['services:read'] });
    const res = await request(t.app)
      .post('/api/v1/reports/invoices')
      .set('Authorization', `Bearer ${k.key}`)
      .set('Content-Type', 'application/json')
      .send('{not json');
    assertError(res, 403, 'insufficient_permissions');
    assert.deepEqual([...res.body.error.details.required_scopes].sort(), ['admin:full', 'reports:generate']);
  });

  // The order of checks holds on every request: authentication first, the operation (404) last.
  test('unknown path under /api: 401 without a valid key, 404 with one (after the rate limit)', async () => {
    assertError(await request(t.app).get('/api/v1/nope'), 401, 'authentication_failed');
    assertError(await request(t.app).delete('/api/v1/services').set('Authorization', 'Bearer sk_live_nope'), 401, 'authentication_failed');
    const k = await apiKey(t.prisma, { scopes: ['services:read'], rateLimit: 5 });
    const res = await request(t.app).get('/api/v1/nope').set('Authorization', `Bearer ${k.key}`);
    assertError(res, 404, 'not_found');
    assert.equal(res.headers['x-ratelimit-remaining'], '4');
  });
});
