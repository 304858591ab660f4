/**
 * Issue 32 row 5: a JSON string with an unpaired surrogate (`"\ud800"`, which JSON.parse reads as
 * a lone UTF-16 code unit) is refused as `400 invalid_parameter`, rule `characters`, naming the
 * field, in every field of every POST body, with a live and a sandbox key alike, before anything
 * is written. A well-formed pair (an emoji) is still text.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { service, serviceRequest } from '../helpers/service-factories.ts';
import { event, webhookEndpoint } from '../helpers/webhook-factories.ts';

let t: TestApp;
const keys: Record<'live' | 'sandbox', string> = { live: '', sandbox: '' };
let serviceNumber = 0;
let requestId = '';
const endpoints: Record<'live' | 'sandbox', string> = { live: '', sandbox: '' };
const events: Record<'live' | 'sandbox', string> = { live: '', sandbox: '' };

before(async () => {
  t = await createTestApp({}, { workers: false });
  const brk = await broker(t.prisma, { approval: 'automatic' });
  keys.live = (await apiKey(t.prisma, { brokerId: brk.id, mode: 'live', scopes: ['admin:full'], rateLimit: 100_000 })).key;
  keys.sandbox = (await apiKey(t.prisma, { brokerId: brk.id, mode: 'test', scopes: ['admin:full'], rateLimit: 100_000 })).key;
  const s = await service(t, { brokerId: brk.id, status: 'active', plan: 'Standard VPS' });
  serviceNumber = s.serviceNumber;
  const r = await serviceRequest(t.prisma, { brokerId: brk.id, type: 'create', requestedPlan: 'Basic VPS' });
  requestId = `REQ-${String(r.id).padStart(6, '0')}`;
  for (const [kind, mode] of [['live', 'live'], ['sandbox', 'test']] as const) {
    endpoints[kind] = await webhookEndpoint(t.prisma, { brokerId: brk.id, mode });
    events[kind] = await event(t.prisma, { brokerId: brk.id, mode });
  }
});
after(async () => t?.close());

type Kind = 'live' | 'sandbox';
/** Each POST body of openapi.yaml, valid as it is, and the fields (dotted paths) each lone surrogate goes into. */
const bodies: Array<[operation: string, path: (kind: Kind) => string, body: Record<string, unknown>, fields: string[]]> = [
  ['createService', () => '/api/v1/service-create', { plan: 'Basic VPS', hostname: 'web01.client.example', customer_email: 'ops@client.example', customer_name: 'Client Ltd', billing_cycle: 'monthly' }, ['customer_name', 'plan', 'hostname', 'customer_email', 'billing_cycle']],
  ['updateServicePassword', () => `/api/v1/services/${serviceNumber}/password`, { password: 'Aa1!correct-horse-battery' }, ['password']],
  ['upgradeService', () => `/api/v1/services/${serviceNumber}/upgrade`, { plan: 'Enterprise VPS' }, ['plan']],
  ['downgradeService', () => `/api/v1/services/${serviceNumber}/downgrade`, { plan: 'Basic VPS' }, ['plan']],
  ['cancelService', () => `/api/v1/services/${serviceNumber}/cancel`, { reason: 'Customer moved', when: 'immediate' }, ['reason', 'when']],
  ['manageRequest', () => `/api/v1/requests/${requestId}/manage`, { action: 'deny', denial_reason: 'Hostname taken' }, ['denial_reason', 'action']],
  ['sendServicesReport', () => '/api/v1/reports/services', { recipients: ['ops@client.example', 'finance@client.example'], status: 'active' }, ['recipients[1]', 'status']],
  ['sendInvoicesReport', () => '/api/v1/reports/invoices', { recipients: ['ops@client.example'], start_date: '2025-01-01', end_date: '2025-01-31' }, ['recipients[0]', 'start_date', 'end_date']],
  ['createWebhookEndpoint', () => '/api/v1/webhook-endpoints', { url: 'https://93.184.216.34/hook', events: ['ping'], description: 'Our hook' }, ['description', 'url', 'events[0]']],
  ['updateWebhookEndpoint', (k) => `/api/v1/webhook-endpoints/${endpoints[k]}`, { description: 'Our hook', status: 'enabled' }, ['description', 'status']],
  ['recoverWebhookEndpoint', (k) => `/api/v1/webhook-endpoints/${endpoints[k]}/recover`, { since: new Date(Date.now() - 3_600_000).toISOString() }, ['since']],
  ['redeliverEvent', (k) => `/api/v1/events/${events[k]}/redeliver`, { endpoint_id: 'we_AAAAAAAAAAAAAAAAAAAAAAAA' }, ['endpoint_id']],
];

/** The body with `value` put into the field at `field` (`name`, `name[i]`), as JSON text with `\u` escapes. */
function withValue(body: Record<string, unknown>, field: string, value: string): string {
  const copy = structuredClone(body);
  const [, name, index] = /^([^[]+)(?:\[(\d+)\])?$/.exec(field)!;
  if (index === undefined) copy[name!] = value;
  else (copy[name!] as unknown[])[Number(index)] = value;
  // JSON.stringify writes a lone surrogate as a `\u` escape (well-formed JSON.stringify, ES2019).
  return JSON.stringify(copy);
}

const LONE = ['\ud800', '\udc00', 'Client\ud83dLtd', 'a\ude00b', '\udc00\ud800', `${'x'.repeat(50)}\udbff`];

/** The rows a refused request must not have changed. */
const counts = async () =>
  Promise.all([
    t.prisma.service.count(), t.prisma.serviceRequest.count(), t.prisma.event.count(), t.prisma.webhookEndpoint.count(), t.prisma.reportRun.count(), t.prisma.webhookDelivery.count(),
  ]);

describe('an unpaired surrogate in any field of a POST body is 400 invalid_parameter, live and sandbox', () => {
  for (const kind of ['live', 'sandbox'] as const) {
    for (const [operation, path, body, fields] of bodies) {
      test(`${kind} ${operation}: ${fields.join(', ')}`, async () => {
        const before = await counts();
        for (const field of fields) {
          for (const lone of LONE) {
            const res = await request(t.app)
              .post(path(kind))
              .set({ Authorization: `Bearer ${keys[kind]}`, 'Content-Type': 'application/json' })
              .send(withValue(body, field, lone));
            const what = `${field}=${JSON.stringify(lone)}: ${res.status} ${res.text}`;
            assert.equal(res.status, 400, what);
            assert.equal(res.body.success, false, what);
            assert.equal(res.body.error.code, 'invalid_parameter', what);
            assert.deepEqual(
              { field: res.body.error.details.field, location: res.body.error.details.location, rule: res.body.error.details.rule },
              { field, location: 'body', rule: 'characters' },
              what,
            );
            assert.equal(res.body.error.message, `Invalid parameter ${field}: must not contain an unpaired surrogate (U+D800-U+DFFF): text must be valid Unicode`);
          }
        }
        assert.deepEqual(await counts(), before, 'nothing was written');
      });
    }
  }

  test('the issue\'s requests, as raw bytes: customer_name "\\ud800" on service-create, "\\udc00" in a cancel reason and a denial reason (sandbox key)', async () => {
    const before = await counts();
    for (const [path, raw, field] of [
      ['/api/v1/service-create', '{"plan":"Basic VPS","hostname":"web01.example.com","customer_email":"a@b.example","customer_name":"\\ud800"}', 'customer_name'],
      [`/api/v1/services/${serviceNumber}/cancel`, '{"reason":"moving \\udc00 away"}', 'reason'],
      [`/api/v1/requests/${requestId}/manage`, '{"action":"deny","denial_reason":"\\udc00"}', 'denial_reason'],
    ] as const) {
      const res = await request(t.app).post(path).set({ Authorization: `Bearer ${keys.sandbox}`, 'Content-Type': 'application/json' }).send(raw);
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.error.details.field, field);
    }
    assert.deepEqual(await counts(), before);
  });

  test('an object key with an unpaired surrogate is refused the same way', async () => {
    const res = await request(t.app)
      .post('/api/v1/service-create')
      .set({ Authorization: `Bearer ${keys.live}`, 'Content-Type': 'application/json' })
      .send('{"plan":"Basic VPS","hostname":"web01.example.com","customer_email":"a@b.example","x\\ud800":"y"}');
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.code, 'invalid_parameter');
    assert.equal(res.body.error.details.rule, 'characters');
    assert.equal(res.body.error.details.field, 'x\ud800');
  });

  test('a well-formed surrogate pair (an emoji) is text: the sandbox accepts it', async () => {
    const res = await request(t.app)
      .post(`/api/v1/services/${serviceNumber}/cancel`)
      .set({ Authorization: `Bearer ${keys.sandbox}`, 'Content-Type': 'application/json' })
      .send('{"reason":"moving away \\ud83d\\ude00"}');
    assert.ok(res.status === 200 || res.status === 202, res.text);
  });
});
