// The HTTP spine: malformed input, validator errors mapped to the contract's error codes, unknown paths,
// request ids, and that no stack trace ever leaves. Each case is a rule of openapi.yaml's "Errors".
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import request from 'supertest';
import { apiKey } from '../helpers/factories.ts';
import { service } from '../helpers/service-factories.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';

let t: TestApp;
let key: string;
const auth = () => ({ Authorization: `Bearer ${key}` });

before(async () => {
  t = await createTestApp({}, { workers: false });
  key = (await apiKey(t.prisma, { scopes: ['admin:full'] })).key;
});
after(async () => t.close());

const post = (path: string) => request(t.app).post(path).set(auth());

function assertEnvelope(body: unknown, code: string): { code: string; message: string; details?: Record<string, unknown> } {
  const b = body as { success: boolean; error: { code: string; message: string; details?: Record<string, unknown> } };
  assert.equal(b.success, false);
  assert.equal(b.error.code, code, JSON.stringify(b));
  assert.equal(typeof b.error.message, 'string');
  assert.ok(!JSON.stringify(b).includes('    at '), 'no stack trace in the body');
  return b.error;
}

describe('malformed bodies', () => {
  it('invalid JSON → 400 invalid_request, message exactly "Invalid JSON in request body"', async () => {
    const res = await post('/api/v1/reports/invoices').set('Content-Type', 'application/json').send('{"recipients": [');
    assert.equal(res.status, 400);
    const error = assertEnvelope(res.body, 'invalid_request');
    assert.equal(error.message, 'Invalid JSON in request body');
  });

  it('a JSON array body → 400 invalid_request', async () => {
    const res = await post('/api/v1/service-create').set('Content-Type', 'application/json').send('[1,2]');
    assert.equal(res.status, 400);
    assertEnvelope(res.body, 'invalid_request');
  });

  it('a JSON primitive body → 400 invalid_request', async () => {
    const res = await post('/api/v1/service-create').set('Content-Type', 'application/json').send('"plan"');
    assert.equal(res.status, 400);
    assertEnvelope(res.body, 'invalid_request');
  });

  it('a body over 1 MiB → 400 invalid_request', async () => {
    const big = JSON.stringify({ plan: 'Basic VPS', hostname: 'a.example.com', customer_email: 'a@example.com', customer_name: 'x'.repeat(1024 * 1024 + 10) });
    const res = await post('/api/v1/service-create').set('Content-Type', 'application/json').send(big);
    assert.equal(res.status, 400);
    assertEnvelope(res.body, 'invalid_request');
  });

  it('a body that is not JSON (text/plain) → 400 invalid_request', async () => {
    const res = await post('/api/v1/service-create').set('Content-Type', 'text/plain').send('plan=Basic');
    assert.equal(res.status, 400);
    assertEnvelope(res.body, 'invalid_request');
  });

  it('a form-encoded body → 400 invalid_request', async () => {
    const res = await post('/api/v1/service-create').type('form').send({ plan: 'Basic VPS' });
    assert.equal(res.status, 400);
    assertEnvelope(res.body, 'invalid_request');
  });
});

describe('validator errors → missing_parameter / invalid_parameter', () => {
  const cases: Array<{ name: string; path: string; body: unknown; code: string; field: string }> = [
    { name: 'createService: plan missing', path: '/api/v1/service-create', body: { hostname: 'a.example.com', customer_email: 'a@example.com' }, code: 'missing_parameter', field: 'plan' },
    { name: 'createService: plan null', path: '/api/v1/service-create', body: { plan: null, hostname: 'a.example.com', customer_email: 'a@example.com' }, code: 'missing_parameter', field: 'plan' },
    { name: 'createService: hostname a number', path: '/api/v1/service-create', body: { plan: 'Basic VPS', hostname: 42, customer_email: 'a@example.com' }, code: 'invalid_parameter', field: 'hostname' },
    { name: 'createService: customer_email not an e-mail', path: '/api/v1/service-create', body: { plan: 'Basic VPS', hostname: 'a.example.com', customer_email: 'nope' }, code: 'invalid_parameter', field: 'customer_email' },
    { name: 'createService: billing_cycle off the enum', path: '/api/v1/service-create', body: { plan: 'Basic VPS', hostname: 'a.example.com', customer_email: 'a@example.com', billing_cycle: 'weekly' }, code: 'invalid_parameter', field: 'billing_cycle' },
    { name: 'upgradeService: plan missing', path: '/api/v1/services/123456789/upgrade', body: {}, code: 'missing_parameter', field: 'plan' },
    { name: 'upgradeService: plan an array', path: '/api/v1/services/123456789/upgrade', body: { plan: ['Basic VPS'] }, code: 'invalid_parameter', field: 'plan' },
    { name: 'manageRequest: action missing', path: '/api/v1/requests/REQ-000001/manage', body: {}, code: 'missing_parameter', field: 'action' },
    { name: 'manageRequest: action off the enum', path: '/api/v1/requests/REQ-000001/manage', body: { action: 'maybe' }, code: 'invalid_parameter', field: 'action' },
    { name: 'sendInvoicesReport: recipients null', path: '/api/v1/reports/invoices', body: { recipients: null, start_date: '2026-01-01', end_date: '2026-01-31' }, code: 'missing_parameter', field: 'recipients' },
    { name: 'sendInvoicesReport: start_date empty', path: '/api/v1/reports/invoices', body: { recipients: ['a@example.com'], start_date: '', end_date: '2026-01-31' }, code: 'missing_parameter', field: 'start_date' },
    { name: 'sendInvoicesReport: end_date a number', path: '/api/v1/reports/invoices', body: { recipients: ['a@example.com'], start_date: '2026-01-01', end_date: 20260131 }, code: 'invalid_parameter', field: 'end_date' },
    { name: 'cancelService: when off the enum', path: '/api/v1/services/123456789/cancel', body: { reason: 'moving', when: 'someday' }, code: 'invalid_parameter', field: 'when' },
  ];
  for (const c of cases) {
    it(`${c.name} → ${c.code} naming ${c.field}`, async () => {
      const res = await post(c.path).send(c.body as object);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      const error = assertEnvelope(res.body, c.code);
      assert.ok(error.details, 'details are present');
      if (c.code === 'missing_parameter') {
        assert.ok((error.details.missing as string[]).includes(c.field), JSON.stringify(error.details));
        assert.ok((error.details.required as string[]).includes(c.field), JSON.stringify(error.details));
      } else {
        assert.equal(error.details.field, c.field, JSON.stringify(error.details));
        assert.equal(typeof error.details.rule, 'string');
      }
    });
  }

  it('a POST with no body at all names every missing field', async () => {
    const res = await post('/api/v1/service-create');
    assert.equal(res.status, 400);
    const error = assertEnvelope(res.body, 'missing_parameter');
    assert.deepEqual([...(error.details!.missing as string[])].sort(), ['customer_email', 'hostname', 'plan']);
  });

  it('a query parameter of the wrong type → invalid_parameter naming it (limit=abc)', async () => {
    const res = await request(t.app).get('/api/v1/services?limit=abc').set(auth());
    assert.equal(res.status, 400);
    const error = assertEnvelope(res.body, 'invalid_parameter');
    assert.equal(error.details!.field, 'limit');
    assert.equal(error.details!.location, 'query');
  });

  it('an empty query parameter is invalid, not missing (limit=)', async () => {
    const res = await request(t.app).get('/api/v1/services?limit=').set(auth());
    assert.equal(res.status, 400);
    assertEnvelope(res.body, 'invalid_parameter');
  });

  it('limit above 100 → invalid_parameter with the rule', async () => {
    const res = await request(t.app).get('/api/v1/requests?limit=101').set(auth());
    assert.equal(res.status, 400);
    const error = assertEnvelope(res.body, 'invalid_parameter');
    assert.equal(error.details!.field, 'limit');
    assert.equal(error.details!.rule, 'maximum');
  });

  it('a path parameter that is not a number → invalid_parameter', async () => {
    const res = await request(t.app).get('/api/v1/services/abc').set(auth());
    assert.equal(res.status, 400);
    const error = assertEnvelope(res.body, 'invalid_parameter');
    assert.equal(error.details!.field, 'service_number');
    assert.equal(error.details!.location, 'path');
  });

  it('an unknown body field → invalid_parameter naming it', async () => {
    const res = await post('/api/v1/services/123456789/upgrade').send({ plan: 'Enterprise VPS', colour: 'red' });
    assert.equal(res.status, 400);
    const error = assertEnvelope(res.body, 'invalid_parameter');
    assert.equal(error.details!.field, 'colour');
  });
});

describe('query strings are read as flat key=value pairs', () => {
  for (const [query, field, reason] of [
    ['limit[]=5', 'limit', /must be integer/],
    ['limit=1&limit=2', 'limit', /must be integer/],
    ['status[a]=b', 'status', /must be string/],
    ['__proto__=x', '__proto__', /Unknown query parameter '__proto__'/],
    ['constructor[prototype][x]=1', 'constructor', /Unknown query parameter 'constructor'/],
  ] as const) {
    it(`?${query} → 400 invalid_parameter on ${field}`, async () => {
      const res = await request(t.app).get(`/api/v1/services?${query}`).set(auth());
      assert.equal(res.status, 400);
      assertEnvelope(res.body, 'invalid_parameter');
      assert.equal(res.body.error.details.field, field);
      assert.match(res.body.error.details.reason, reason);
    });
  }

  it('+ and percent-escapes decode as in a form: search=a+b%E2%82%AC finds "Ana b€rg"', async () => {
    const own = await apiKey(t.prisma, { scopes: ['services:read'] });
    const row = await service(t, { brokerId: own.brokerId, customerName: 'Ana b€rg' });
    await service(t, { brokerId: own.brokerId, customerName: 'Ana berg' });
    const res = await request(t.app).get('/api/v1/services?search=a+b%E2%82%AC').set('Authorization', `Bearer ${own.key}`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data.map((s: { service_number: number }) => s.service_number), [row.serviceNumber]);
  });
});

describe('unknown paths and methods', () => {
  for (const [method, path] of [
    ['get', '/api/v1/nope'],
    ['get', '/api/v2/services'],
    ['get', '/api'],
    ['delete', '/api/v1/services'],
    ['put', '/api/v1/reports/invoices'],
    ['get', '/api/v1/reports/invoices'],
    // A trailing slash names no path of the contract.
    ['get', '/api/v1/services/'],
    ['get', '/api/v1/auth-check/'],
    ['post', '/api/v1/services/123456789/cancel/'],
  ] as const) {
    it(`${method.toUpperCase()} ${path} → 404 not_found`, async () => {
      const res = await request(t.app)[method](path).set(auth());
      assert.equal(res.status, 404);
      assertEnvelope(res.body, 'not_found');
    });
  }

  it('/API in other letter cases goes through the same gate: 401 without a key, 404 with one', async () => {
    for (const path of ['/API/v1/auth-check', '/Api/v1/services']) {
      const anonymous = await request(t.app).get(path);
      assert.equal(anonymous.status, 401, path);
      assertEnvelope(anonymous.body, 'authentication_failed');
      const res = await request(t.app).get(path).set(auth());
      assert.equal(res.status, 404, path);
      assertEnvelope(res.body, 'not_found');
    }
  });

  it('HEAD is answered wherever GET is, as GET without a body (RFC 9110); not where only POST is', async () => {
    const head = await request(t.app).head('/api/v1/auth-check').set(auth());
    assert.equal(head.status, 200);
    assert.equal(head.text, undefined);
    const onPost = await request(t.app).head('/api/v1/reports/invoices').set(auth());
    assert.equal(onPost.status, 404);
  });

  it('an unknown path outside /api is a 404 in the envelope too', async () => {
    const res = await request(t.app).get('/nothing-here');
    assert.equal(res.status, 404);
    assertEnvelope(res.body, 'not_found');
  });
});

describe('request ids', () => {
  it('a sane X-Request-Id from the client is echoed', async () => {
    const res = await request(t.app).get('/api/v1/auth-check').set(auth()).set('X-Request-Id', 'client-abc.123');
    assert.equal(res.headers['x-request-id'], 'client-abc.123');
  });

  it('an unsafe X-Request-Id is replaced by a generated one', async () => {
    const res = await request(t.app).get('/api/v1/auth-check').set(auth()).set('X-Request-Id', 'bad id\twith spaces');
    assert.match(String(res.headers['x-request-id']), /^req_[0-9a-f]{32}$/);
  });

  it('errors carry a request id as well, in the header and in error.request_id', async () => {
    const res = await request(t.app).get('/api/v1/nope');
    assert.match(String(res.headers['x-request-id']), /^req_[0-9a-f]{32}$/);
    assert.equal(res.body.error.request_id, res.headers['x-request-id']);
  });

  it('error.request_id is the client\'s own id when it sent a sane one (401, 400)', async () => {
    const unauthorised = await request(t.app).get('/api/v1/auth-check').set('X-Request-Id', 'sync-42');
    assert.equal(unauthorised.status, 401);
    assert.equal(unauthorised.body.error.request_id, 'sync-42');
    const invalid = await request(t.app).get('/api/v1/services?limit=0').set(auth()).set('X-Request-Id', 'sync-43');
    assert.equal(invalid.status, 400);
    assert.equal(invalid.body.error.request_id, 'sync-43');
  });
});

describe('modified_since with an unencoded + (read as a space)', () => {
  it('answers one clear invalid_parameter without validator internals', async () => {
    const res = await request(t.app).get('/api/v1/services?modified_since=2025-03-01T10:30:00+01:00').set(auth());
    assert.equal(res.status, 400);
    const error = assertEnvelope(res.body, 'invalid_parameter');
    assert.match(error.message, /^Invalid parameter modified_since: must be an ISO 8601 date .* or date-time /);
    assert.match(error.message, /%2B/);
    assert.doesNotMatch(JSON.stringify(res.body), /anyOf|iso8601-date-time|format "date"/);
    assert.equal(error.details?.field, 'modified_since');
    assert.equal(error.details?.location, 'query');
    assert.equal(error.details?.rule, 'format');
    assert.equal(error.details?.errors, undefined, 'one error, not one per anyOf branch');
  });

  it('the same instant sent with %2B is accepted', async () => {
    const res = await request(t.app).get('/api/v1/services?modified_since=2025-03-01T10:30:00%2B01:00').set(auth());
    assert.equal(res.status, 200);
  });
});
