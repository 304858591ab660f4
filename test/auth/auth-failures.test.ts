import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { createApp } from '../../src/app.ts';
import { createGate, gateSettings, type Gate } from '../../src/auth/gate.ts';
import { loadConfig } from '../../src/config.ts';
import { generateApiKey } from '../../src/auth/keys.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey } from '../helpers/factories.ts';

const LIMIT = 3;
let t: TestApp;
const gates: Gate[] = [];

before(async () => {
  t = await createTestApp({ authFailuresPerIp: LIMIT, authFailuresWindowSeconds: 30 }, { workers: false });
});
after(async () => {
  for (const g of gates) await g.apiLog.close();
  await t?.close();
});

/** An API process of its own (its own gate and memory) on the shared database and Redis, trusting X-Forwarded-For from loopback. */
function apiProcess(settings = gateSettings(t.deps.config)): Express {
  const gate = createGate({ prisma: t.prisma, redis: t.deps.redis, logger: t.deps.logger, ...settings });
  gates.push(gate);
  return createApp({ ...t.deps, gate: gate.gate, config: { ...t.deps.config, trustProxy: 'loopback' } });
}

const authCheck = (app: Express, authorization: string | undefined, ip: string) => {
  const req = request(app).get('/api/v1/auth-check').set('X-Forwarded-For', ip);
  if (authorization !== undefined) req.set('Authorization', authorization);
  return req;
};

describe('failed authentications per IP (AUTH_FAILURES_PER_IP)', () => {
  // The caller IP comes from X-Forwarded-For, so each test has an address of its own.
  let app: Express;
  before(() => {
    app = apiProcess();
  });

  test('after the bound, an unknown key from that IP is 429 with Retry-After, shared by every API process', async () => {
    const ip = '203.0.113.10';
    const other = apiProcess();
    for (let i = 0; i < LIMIT; i++) {
      const res = await authCheck(app, `Bearer ${generateApiKey('live').key}`, ip);
      assert.equal(res.status, 401, JSON.stringify(res.body));
    }
    const res = await authCheck(app, `Bearer ${generateApiKey('live').key}`, ip);
    assert.equal(res.status, 429, JSON.stringify(res.body));
    assert.equal(res.body.error.code, 'rate_limit_exceeded');
    const retryAfter = Number(res.headers['retry-after']);
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 30, `Retry-After ${res.headers['retry-after']}`);
    assert.deepEqual(res.body.error.details, { reason: 'auth_failures_per_ip', limit: LIMIT, window_seconds: 30, retry_after: retryAfter });
    // Missing and malformed keys are failures too.
    assert.equal((await authCheck(app, undefined, ip)).status, 429);
    // Another API process (same Redis) refuses the IP as well; its own failures were not needed.
    const fromOther = await authCheck(other, `Bearer ${generateApiKey('live').key}`, ip);
    assert.equal(fromOther.status, 429, JSON.stringify(fromOther.body));
  });

  test('a valid key from a refused IP still passes (a shared NAT does not lock out good clients)', async () => {
    const ip = '203.0.113.11';
    const k = await apiKey(t.prisma);
    for (let i = 0; i <= LIMIT; i++) await authCheck(app, `Bearer ${generateApiKey('live').key}`, ip);
    assert.equal((await authCheck(app, `Bearer ${generateApiKey('live').key}`, ip)).status, 429);
    const res = await authCheck(app, `Bearer ${k.key}`, ip);
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });

  test('other IPs are not affected, and successes do not count', async () => {
    const k = await apiKey(t.prisma);
    for (let i = 0; i < LIMIT * 2; i++) assert.equal((await authCheck(app, `Bearer ${k.key}`, '203.0.113.12')).status, 200);
    for (let i = 0; i <= LIMIT; i++) await authCheck(app, `Bearer ${generateApiKey('live').key}`, '203.0.113.13');
    assert.equal((await authCheck(app, `Bearer ${generateApiKey('live').key}`, '203.0.113.14')).status, 401);
    assert.equal((await authCheck(app, `Bearer ${generateApiKey('live').key}`, '203.0.113.12')).status, 401);
  });

  test('IPv6 callers are counted per /64: addresses of one /64 share a count, another /64 does not', async () => {
    for (let i = 1; i <= LIMIT; i++) {
      assert.equal((await authCheck(app, `Bearer ${generateApiKey('live').key}`, `2001:db8:0:1::${i.toString(16)}`)).status, 401);
    }
    // Another address of the same /64, in another spelling: over the bound.
    const same = await authCheck(app, `Bearer ${generateApiKey('live').key}`, '2001:DB8:0:1:ffff:ffff:ffff:ffff');
    assert.equal(same.status, 429, JSON.stringify(same.body));
    assert.equal(same.body.error.details.reason, 'auth_failures_per_ip');
    // The next /64 has a count of its own.
    assert.equal((await authCheck(app, `Bearer ${generateApiKey('live').key}`, '2001:db8:0:2::1')).status, 401);
  });

  test('an IPv4-mapped IPv6 caller is counted as its IPv4 address, alone', async () => {
    for (let i = 0; i < LIMIT; i++) {
      assert.equal((await authCheck(app, `Bearer ${generateApiKey('live').key}`, '::ffff:203.0.113.16')).status, 401);
    }
    assert.equal((await authCheck(app, `Bearer ${generateApiKey('live').key}`, '203.0.113.16')).status, 429);
    assert.equal((await authCheck(app, `Bearer ${generateApiKey('live').key}`, '203.0.113.17')).status, 401);
  });

  test('off by default: failures are answered 401 however many there are', async () => {
    const ip = '203.0.113.15';
    const defaults = loadConfig({ NODE_ENV: 'test' });
    assert.equal(defaults.authFailuresPerIp, 0);
    const plain = apiProcess(gateSettings(defaults));
    for (let i = 0; i < LIMIT * 3; i++) {
      assert.equal((await authCheck(plain, `Bearer ${generateApiKey('live').key}`, ip)).status, 401);
    }
  });
});
