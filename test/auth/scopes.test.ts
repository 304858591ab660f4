import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { SCOPES, type Scope } from '../../src/auth/keys.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey } from '../helpers/factories.ts';

/**
 * The scope each operation requires besides admin:full (openapi.yaml, "Authentication" scope table)
 * (`null`: any valid key). openapi.yaml must say the same, and the gate must enforce it.
 */
const REQUIRED: Record<string, Scope | null> = {
  getAuthCheck: null,
  postAuthCheck: 'services:write',
  createService: 'services:write',
  listServices: 'services:read',
  getService: 'admin:full',
  updateServicePassword: 'admin:full',
  upgradeService: 'admin:full',
  downgradeService: 'admin:full',
  cancelService: 'admin:full',
  listRequests: 'requests:read',
  manageRequest: 'requests:write',
  sendServicesReport: 'reports:generate',
  sendInvoicesReport: 'reports:generate',
  getReport: 'reports:generate',
  listReports: 'reports:generate',
  createWebhookEndpoint: 'admin:full',
  listWebhookEndpoints: 'admin:full',
  getWebhookEndpoint: 'admin:full',
  updateWebhookEndpoint: 'admin:full',
  deleteWebhookEndpoint: 'admin:full',
  rotateWebhookEndpointSecret: 'admin:full',
  pingWebhookEndpoint: 'admin:full',
  recoverWebhookEndpoint: 'admin:full',
  listWebhookEndpointDeliveries: 'admin:full',
  getWebhookEndpointStats: 'admin:full',
  sendExampleEvent: 'admin:full',
  listEvents: 'admin:full',
  getEvent: 'admin:full',
  redeliverEvent: 'admin:full',
  listRequestLogs: 'admin:full',
  getRequestLog: 'admin:full',
  getRequestStats: 'admin:full',
  createConsoleSession: 'admin:full',
};

const PATH_VALUES: Record<string, string> = {
  service_number: '123456789',
  request_id: 'REQ-000001',
  endpoint_id: 'we_AAAAAAAAAAAAAAAAAAAAAAAA',
  event_id: 'evt_AAAAAAAAAAAAAAAAAAAAAAAA',
};

let t: TestApp;
const keys = new Map<Scope, string>();

before(async () => {
  t = await createTestApp();
  const b = (await apiKey(t.prisma, { scopes: [] })).brokerId;
  for (const scope of SCOPES) {
    keys.set(scope, (await apiKey(t.prisma, { brokerId: b, scopes: [scope], mode: 'test', rateLimit: 1000 })).key);
  }
});
after(async () => {
  await t?.close();
});

describe('scopes', () => {
  test('openapi.yaml\'s operations under /api are these, each with its scopes', () => {
    const ops = t.deps.contract.operations.filter((o) => o.pathTemplate.startsWith('/api/'));
    assert.deepEqual(ops.map((o) => o.operationId).sort(), Object.keys(REQUIRED).sort());
    for (const op of ops) {
      const required = REQUIRED[op.operationId];
      const expected = required === null ? [] : [...new Set([required, 'admin:full'])].sort();
      assert.deepEqual([...op.scopes].sort(), expected, op.operationId);
    }
  });

  test('outside /api only downloadReport, which takes no key (its link is the credential)', () => {
    const outside = t.deps.contract.operations.filter((o) => !o.pathTemplate.startsWith('/api/'));
    assert.deepEqual(outside.map((o) => [o.operationId, o.pathTemplate]), [['downloadReport', '/downloads/reports/{token}']]);
    const document = t.deps.contract.document as { paths: Record<string, { get: { security?: unknown[] } }> };
    assert.deepEqual(document.paths['/downloads/reports/{token}']!.get.security, []);
  });

  for (const [operationId, required] of Object.entries(REQUIRED)) {
    for (const scope of SCOPES) {
      const allowed = required === null || scope === required || scope === 'admin:full';
      test(`${operationId} with ${scope}: ${allowed ? 'allowed' : '403'}`, async () => {
        const op = t.deps.contract.byId.get(operationId);
        assert.ok(op, `no operation ${operationId}`);
        const path = op.pathTemplate.replace(/\{([^}]+)\}/g, (_m, name: string) => PATH_VALUES[name] ?? '1');
        const req = op.method === 'GET' ? request(t.app).get(path) : request(t.app).post(path).send({});
        const res = await req.set('Authorization', `Bearer ${keys.get(scope)}`);
        if (allowed) {
          assert.ok(![401, 403].includes(res.status), `${res.status} ${JSON.stringify(res.body)}`);
        } else {
          assert.equal(res.status, 403, JSON.stringify(res.body));
          assert.equal(res.body.error.code, 'insufficient_permissions');
          assert.deepEqual([...res.body.error.details.required_scopes].sort(), [...op.scopes].sort());
        }
      });
    }
  }

  test('a key with several scopes is admitted by any one of them', async () => {
    const k = await apiKey(t.prisma, { scopes: ['services:read', 'services:write'] });
    const res = await request(t.app).post('/api/v1/auth-check').set('Authorization', `Bearer ${k.key}`);
    assert.equal(res.status, 200);
  });

  test('a key with no scopes may still call GET /auth-check', async () => {
    const k = await apiKey(t.prisma, { scopes: [] });
    const res = await request(t.app).get('/api/v1/auth-check').set('Authorization', `Bearer ${k.key}`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data.scopes, []);
  });
});
