// Keys issued by the CLI's functions are the keys the API gate accepts: the demo keys call
// GET /api/v1/auth-check, and the key options (IP restriction, revocation, rate limit) take effect.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { createCredentials } from '../../src/db/credentials.ts';
import { runDemo, DEMO_SLUG } from '../../src/cli/demo.ts';
import { createKey, revokeKey } from '../../src/cli/keys.ts';
import { DEFAULT_KEY_CACHE_MS } from '../../src/auth/gate.ts';

let t: TestApp;
before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t?.close();
});

const authCheck = (key: string) => request(t.app).get('/api/v1/auth-check').set('Authorization', `Bearer ${key}`);

test('demo keys authenticate; the live key sees the demo services', async () => {
  const { result } = await runDemo(t.prisma, { credentials: createCredentials(randomBytes(32)) });
  const test = await authCheck(result.test_key);
  assert.equal(test.status, 200, JSON.stringify(test.body));
  assert.equal(test.body.data.mode, 'test');
  assert.deepEqual(test.body.data.scopes, ['admin:full']);
  const live = await authCheck(result.live_key);
  assert.equal(live.status, 200, JSON.stringify(live.body));
  assert.equal(live.body.data.mode, 'live');
  assert.equal(live.body.data.service_count, await t.prisma.service.count({ where: { broker: { slug: DEMO_SLUG } } }));
});

test('--restrict-ip with no whitelist is refused from everywhere; a revoked key is refused', async () => {
  const closed = await createKey(t.prisma, { brokerSlug: DEMO_SLUG, mode: 'test', scopes: ['services:read'], restrictIp: true });
  const refused = await authCheck(closed.key);
  assert.equal(refused.status, 403);
  assert.equal(refused.body.error.code, 'insufficient_permissions');

  const open = await createKey(t.prisma, { brokerSlug: DEMO_SLUG, mode: 'live', scopes: ['services:read'], ipWhitelist: ['127.0.0.1', '::1'] });
  assert.equal((await authCheck(open.key)).status, 200);
  await revokeKey(t.prisma, open.id);
  // The gate keeps a found key row for DEFAULT_KEY_CACHE_MS; a revocation made elsewhere (the
  // CLI is another process) shows within that.
  await new Promise((resolve) => setTimeout(resolve, DEFAULT_KEY_CACHE_MS + 100));
  const revoked = await authCheck(open.key);
  assert.equal(revoked.status, 401);
  assert.equal(revoked.body.error.code, 'authentication_failed');
});

test('--rate-limit is the per-minute limit the gate applies', async () => {
  const k = await createKey(t.prisma, { brokerSlug: DEMO_SLUG, mode: 'test', scopes: ['services:read'], rateLimit: 2 });
  const first = await authCheck(k.key);
  assert.equal(first.status, 200);
  assert.equal(first.headers['x-ratelimit-limit'], '2');
  assert.equal((await authCheck(k.key)).status, 200);
  const third = await authCheck(k.key);
  assert.equal(third.status, 429);
  assert.equal(third.body.error.code, 'rate_limit_exceeded');
});
