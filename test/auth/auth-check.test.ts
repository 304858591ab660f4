import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, broker } from '../helpers/factories.ts';

let t: TestApp;
let brokerId: string;

before(async () => {
  t = await createTestApp();
  const b = await broker(t.prisma, { name: 'Counting Broker' });
  const other = await broker(t.prisma);
  brokerId = b.id;
  const plan = await t.prisma.plan.findFirstOrThrow({ orderBy: { tier: 'asc' } });
  const service = (owner: string, serviceNumber: number, status: 'active' | 'cancelled') => ({
    serviceNumber,
    brokerId: owner,
    planId: plan.id,
    status,
    hostname: `vps${serviceNumber}.example.com`,
    customerEmail: 'customer@example.com',
    username: 'root',
    passwordEnc: 'v1:AAAA:AAAA:AAAA',
  });
  await t.prisma.service.createMany({
    data: [service(b.id, 100000001, 'active'), service(b.id, 100000002, 'cancelled'), service(other.id, 100000003, 'active')],
  });
});
after(async () => {
  await t?.close();
});

const get = (key: string) => request(t.app).get('/api/v1/auth-check').set('Authorization', `Bearer ${key}`);
const post = (key: string) => request(t.app).post('/api/v1/auth-check').set('Authorization', `Bearer ${key}`);

describe('GET /api/v1/auth-check', () => {
  test('live key with services:read: the broker\'s service count, all statuses', async () => {
    const k = await apiKey(t.prisma, { brokerId, scopes: ['services:read'], name: 'Reader' });
    const res = await get(k.key);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.data, {
      object: 'auth_check',
      key_id: k.id,
      key_name: 'Reader',
      mode: 'live',
      scopes: ['services:read'],
      broker_id: brokerId,
      broker_name: 'Counting Broker',
      service_count: 2,
    });
  });

  test('admin:full also sees the count', async () => {
    const k = await apiKey(t.prisma, { brokerId, scopes: ['admin:full'] });
    assert.equal((await get(k.key)).body.data.service_count, 2);
  });

  test('a key that may not read services gets no count', async () => {
    const k = await apiKey(t.prisma, { brokerId, scopes: ['services:write', 'reports:generate'] });
    const res = await get(k.key);
    assert.equal(res.status, 200);
    assert.equal('service_count' in res.body.data, false);
    assert.deepEqual(res.body.data.scopes, ['services:write', 'reports:generate']);
  });

  test('sandbox key: mode test, service count 1, no simulated markers', async () => {
    const k = await apiKey(t.prisma, { brokerId, scopes: ['services:read'], mode: 'test' });
    const res = await get(k.key);
    assert.equal(res.status, 200);
    assert.equal(res.body.data.mode, 'test');
    assert.equal(res.body.data.service_count, 1);
    assert.equal(res.body.data.simulated, undefined);
  });

  test('sandbox test scenarios apply to auth-check too', async () => {
    const k = await apiKey(t.prisma, { brokerId, mode: 'test' });
    const res = await get(k.key).set('X-Test-Scenario', 'SERVER_ERROR');
    assert.equal(res.status, 500);
    assert.equal(res.body.error.code, 'server_error');
    assert.equal((await get(k.key).set('X-Test-Scenario', 'provider_review')).status, 200);
  });
});

describe('POST /api/v1/auth-check', () => {
  test('services:write: write access confirmed', async () => {
    const k = await apiKey(t.prisma, { brokerId, scopes: ['services:write'], mode: 'test' });
    const res = await post(k.key);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, {
      success: true,
      data: { object: 'write_access', write_access: true, key_id: k.id, mode: 'test', scopes: ['services:write'] },
    });
  });

  test('admin:full: write access confirmed', async () => {
    const k = await apiKey(t.prisma, { brokerId, scopes: ['admin:full'] });
    const res = await post(k.key);
    assert.equal(res.status, 200);
    assert.equal(res.body.data.mode, 'live');
  });

  test('services:read only: 403 with the required scopes', async () => {
    const k = await apiKey(t.prisma, { brokerId, scopes: ['services:read'] });
    const res = await post(k.key);
    assert.equal(res.status, 403);
    assert.equal(res.body.error.code, 'insufficient_permissions');
    assert.deepEqual([...res.body.error.details.required_scopes].sort(), ['admin:full', 'services:write']);
  });
});
