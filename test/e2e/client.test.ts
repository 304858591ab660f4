// The project's TypeScript client (clients/typescript) against a real server: every operation of
// the contract with a live key and a sandbox key, typed end to end, so the client and the server
// cannot drift. Then what the client adds: one typed error, Retry-After honoured, the same
// Idempotency-Key on every retry of a POST.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ClientApiError, createClient } from '../../clients/typescript/src/index.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { service } from '../helpers/service-factories.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { ok, scripted } from '../helpers/scripted-fetch.ts';

let t: TestApp;
let server: Server;
let baseUrl: string;
let brokerId: string;

before(async () => {
  t = await createTestApp();
  server = t.app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  brokerId = (await broker(t.prisma, { approval: 'automatic' })).id;
  await t.prisma.invoice.createMany({
    data: [
      { brokerId, number: 'E2E-1', serviceNumber: 100000001, amount: '10.00', currency: 'EUR', status: 'paid', date: new Date('2025-05-02T00:00:00Z') },
      { brokerId, number: 'E2E-2', serviceNumber: 100000002, amount: '12.00', currency: 'EUR', status: 'pending', date: new Date('2025-05-03T00:00:00Z') },
    ],
  });
});
after(async () => {
  server?.close();
  await t?.close();
});

async function clientFor(mode: 'live' | 'test') {
  const key = await apiKey(t.prisma, { brokerId, mode, scopes: ['admin:full'], rateLimit: 1000 });
  return createClient({ baseUrl, apiKey: key.key });
}

for (const mode of ['live', 'test'] as const) {
  describe(`every operation through the client, ${mode} key`, () => {
    test('auth-check, services, requests and reports answer typed data', async () => {
      const api = await clientFor(mode);
      const who = (await api.GET('/api/v1/auth-check')).data!;
      assert.equal(who.data.mode, mode);
      assert.equal((await api.POST('/api/v1/auth-check')).data!.data.write_access, true);

      const createdAnswer = await api.POST('/api/v1/service-create', {
        body: { plan: 'Basic VPS', hostname: `e2e-${mode}.example.com`, customer_email: 'e2e@example.com' },
      });
      // Automatic approval: the 200 (a service), told from the 202 (a request) by its status.
      assert.equal(createdAnswer.status, 200);
      const created = createdAnswer.data;
      assert.ok('service_number' in created.data && typeof created.data.service_number === 'number');
      const listed = (await api.GET('/api/v1/services', { params: { query: { limit: 5 } } })).data!;
      assert.ok(listed.pagination.total >= 1);

      // Live changes need services of the broker's own; the sandbox echoes any number.
      const active = mode === 'live' ? (await service(t, { brokerId, plan: 'Standard VPS' })).serviceNumber : 731845206;
      const other = mode === 'live' ? (await service(t, { brokerId, plan: 'Standard VPS' })).serviceNumber : 731845206;
      const third = mode === 'live' ? (await service(t, { brokerId, plan: 'Standard VPS' })).serviceNumber : 731845206;
      const path = { params: { path: { service_number: active } } };
      assert.equal((await api.GET('/api/v1/services/{service_number}', path)).data!.data.service_number, active);
      const password = (await api.POST('/api/v1/services/{service_number}/password', { ...path, body: {} })).data!;
      assert.equal(password.data.password_generated, true);
      const upgrade = (await api.POST('/api/v1/services/{service_number}/upgrade', { ...path, body: { plan: 'Professional VPS' } })).data!;
      assert.equal(upgrade.data.request_type, 'upgrade');
      const downgrade = (await api.POST('/api/v1/services/{service_number}/downgrade', {
        params: { path: { service_number: other } },
        body: { plan: 'Basic VPS' },
      })).data!;
      assert.equal(downgrade.data.request_type, 'downgrade');
      const cancel = (await api.POST('/api/v1/services/{service_number}/cancel', {
        params: { path: { service_number: third } },
        body: { reason: 'end of project' },
      })).data!;
      assert.equal(cancel.data.request_type, 'cancel');

      const requests = (await api.GET('/api/v1/requests', { params: { query: { status: 'pending' } } })).data!;
      const pending = mode === 'live' ? upgrade.data.request_id : requests.data[0]!.request_id;
      const decided = (await api.POST('/api/v1/requests/{request_id}/manage', {
        params: { path: { request_id: pending } },
        body: { action: 'approve' },
      })).data!;
      assert.equal(decided.data.request_status, 'approved');

      const invoices = (await api.POST('/api/v1/reports/invoices', {
        body: { recipients: ['finance@example.com'], start_date: '2025-05-01', end_date: '2025-05-31' },
      })).data!;
      assert.equal(invoices.data.total_invoices, mode === 'live' ? 2 : 12);
      const services = (await api.POST('/api/v1/reports/services', { body: { recipients: ['ops@example.com'] } })).data!;
      assert.equal(services.data.report_type, 'services');
      const run = (await api.GET('/api/v1/reports/{report_id}', { params: { path: { report_id: invoices.data.report_id } } })).data!;
      assert.equal(run.data.report_id, invoices.data.report_id);
    });

    test('webhook endpoints and events answer typed data, in the key\'s own mode', async () => {
      const api = await clientFor(mode);
      const created = (await api.POST('/api/v1/webhook-endpoints', { body: { url: 'https://93.184.216.34/e2e', events: ['ping'] } })).data!;
      const secret: string = created.data.secret;
      assert.match(secret, /^whsec_/);
      assert.equal(created.data.mode, mode);
      const endpoint = { params: { path: { endpoint_id: created.data.id } } };
      const listed = (await api.GET('/api/v1/webhook-endpoints', { params: { query: { limit: 100 } } })).data!;
      assert.ok(listed.data.some((e) => e.id === created.data.id));
      assert.equal((await api.GET('/api/v1/webhook-endpoints/{endpoint_id}', endpoint)).data!.data.status, 'enabled');
      const updated = (await api.POST('/api/v1/webhook-endpoints/{endpoint_id}', { ...endpoint, body: { description: 'e2e' } })).data!;
      assert.equal(updated.data.description, 'e2e');
      const rotated = (await api.POST('/api/v1/webhook-endpoints/{endpoint_id}/rotate-secret', endpoint)).data!;
      assert.notEqual(rotated.data.secret, secret);
      const ping = (await api.POST('/api/v1/webhook-endpoints/{endpoint_id}/ping', endpoint)).data!;
      assert.equal(ping.data.type, 'ping');
      const events = (await api.GET('/api/v1/events', { params: { query: { type: 'ping', limit: 1 } } })).data!;
      assert.equal(events.data[0]!.id, ping.data.id);
      const detail = (await api.GET('/api/v1/events/{event_id}', { params: { path: { event_id: ping.data.id } } })).data!;
      assert.equal(detail.data.deliveries[0]!.endpoint_id, created.data.id);
      const again = (await api.POST('/api/v1/events/{event_id}/redeliver', {
        params: { path: { event_id: ping.data.id } },
        body: { endpoint_id: created.data.id },
      })).data!;
      assert.equal(again.data.deliveries.length, 2);
      const deliveries = (await api.GET('/api/v1/webhook-endpoints/{endpoint_id}/deliveries', endpoint)).data!;
      assert.deepEqual(deliveries.data.map((d) => [d.object, d.event_id]), [['webhook_delivery', ping.data.id], ['webhook_delivery', ping.data.id]]);
      // Nothing of this endpoint has failed (the workers may still be sending): nothing to queue.
      const recovered = (await api.POST('/api/v1/webhook-endpoints/{endpoint_id}/recover', { ...endpoint, body: { since: created.data.created_at } })).data!;
      assert.deepEqual([recovered.data.object, recovered.data.endpoint_id, recovered.data.has_more], ['webhook_recovery', created.data.id, false]);
      const deleted = (await api.POST('/api/v1/webhook-endpoints/{endpoint_id}/delete', endpoint)).data!;
      assert.equal(deleted.data.deleted, true);
    });

    test('request logs answer typed data: the key\'s own requests, in its own mode', async () => {
      const api = await clientFor(mode);
      const requestId = (await api.GET('/api/v1/auth-check')).response.headers.get('x-request-id')!;
      const one = (await api.GET('/api/v1/request-logs/{request_id}', { params: { path: { request_id: requestId } } })).data!;
      assert.deepEqual([one.data.object, one.data.operation, one.data.status, one.data.mode], ['request_log', 'getAuthCheck', 200, mode]);
      const listed = (await api.GET('/api/v1/request-logs', { params: { query: { operation: 'getAuthCheck', status: '2xx', limit: 10 } } })).data!;
      assert.ok(listed.data.some((e) => e.request_id === requestId));
      assert.equal(listed.pagination.limit, 10);
    });

    test('a conditional GET answered 304 is no error: data and error undefined, the copy kept', async () => {
      const api = await clientFor(mode);
      const first = await api.GET('/api/v1/webhook-endpoints');
      const etag = first.response.headers.get('ETag');
      assert.ok(etag);
      const again = await api.GET('/api/v1/webhook-endpoints', { headers: { 'If-None-Match': etag } });
      assert.equal(again.response.status, 304);
      assert.equal(again.response.headers.get('ETag'), etag);
      // The NotModified case: its own status, no data, no error.
      const { response: _response, ...shape } = again;
      assert.deepEqual(shape, { status: 304, notModified: true, data: undefined, error: undefined });
      // Through the parameter the contract declares, too.
      const typed = await api.GET('/api/v1/webhook-endpoints', { params: { header: { 'If-None-Match': etag } } });
      assert.equal(typed.response.status, 304);
      assert.equal(typed.notModified, true);
      const changed = await api.GET('/api/v1/webhook-endpoints', { headers: { 'If-None-Match': '"other"' } });
      assert.equal(changed.notModified, false);
      assert.ok(!changed.notModified && changed.status === 200 && changed.data.success);
      assert.equal(first.status, 200);
      assert.equal(first.notModified, false);
    });

    test('an error answer is one typed ClientApiError with code, message, details, status and request id', async () => {
      const api = await clientFor(mode);
      const missing = await api.GET('/api/v1/requests', { params: { query: { limit: 1000 } } }).then(
        () => assert.fail('expected an error'),
        (err: unknown) => err,
      );
      assert.ok(missing instanceof ClientApiError);
      assert.equal(missing.code, 'invalid_parameter');
      assert.equal(missing.status, 400);
      assert.equal(missing.details?.field, 'limit');
      assert.match(missing.requestId ?? '', /\S/);
    });
  });
}

describe('what the client adds to fetch', () => {
  const limited = (retryAfter: string) => () =>
    new Response(JSON.stringify({ success: false, error: { code: 'rate_limit_exceeded', message: 'slow down', request_id: 'req_1' } }), {
      status: 429,
      headers: { 'Content-Type': 'application/json', 'Retry-After': retryAfter },
    });

  test('a 429 is retried after its Retry-After, with the same Idempotency-Key', async () => {
    const { seen, fetch } = scripted([limited('0'), limited('0'), ok]);
    const api = createClient({ baseUrl: 'http://api.invalid', apiKey: 'sk_test_x', fetch });
    await api.POST('/api/v1/auth-check');
    assert.equal(seen.length, 3);
    const keys = seen.map((r) => r.headers.get('Idempotency-Key'));
    assert.match(keys[0] ?? '', /^[0-9a-f-]{36}$/);
    assert.deepEqual(new Set(keys).size, 1);
    assert.equal(seen[0]!.headers.get('Authorization'), 'Bearer sk_test_x');
  });

  test('a Retry-After longer than maxRetryDelayMs is not waited for: the 429 is thrown', async () => {
    const { seen, fetch } = scripted([limited('120')]);
    const api = createClient({ baseUrl: 'http://api.invalid', apiKey: 'sk_test_x', fetch, maxRetryDelayMs: 1000 });
    await assert.rejects(api.POST('/api/v1/auth-check'), (err: unknown) => err instanceof ClientApiError && err.code === 'rate_limit_exceeded' && err.status === 429 && err.requestId === 'req_1');
    assert.equal(seen.length, 1);
  });

  const failed = (status: number, code: string, retryAfter?: string) => () =>
    new Response(JSON.stringify({ success: false, error: { code, message: code, request_id: 'req_2' } }), {
      status,
      headers: { 'Content-Type': 'application/json', ...(retryAfter !== undefined && { 'Retry-After': retryAfter }) },
    });

  for (const [name, answer] of [
    ['500 server_error', failed(500, 'server_error')],
    ['503', failed(503, 'server_error')],
    ['409 idempotency_key_in_use', failed(409, 'idempotency_key_in_use', '0')],
  ] as const) {
    test(`a POST answered ${name} is retried with the same Idempotency-Key`, async () => {
      const { seen, fetch } = scripted([answer, ok]);
      const api = createClient({ baseUrl: 'http://api.invalid', apiKey: 'sk_test_x', fetch, maxRetryDelayMs: 1000 });
      await api.POST('/api/v1/auth-check');
      assert.equal(seen.length, 2);
      assert.equal(seen[0]!.headers.get('Idempotency-Key'), seen[1]!.headers.get('Idempotency-Key'));
    });
  }

  for (const [status, code] of [
    [409, 'conflict'],
    [409, 'idempotency_key_answer_lost'],
    [422, 'idempotency_key_reused'],
    [404, 'not_found'],
  ] as const) {
    test(`${status} ${code} is thrown at once, not retried`, async () => {
      const { seen, fetch } = scripted([failed(status, code), ok]);
      const api = createClient({ baseUrl: 'http://api.invalid', apiKey: 'sk_test_x', fetch });
      await assert.rejects(api.POST('/api/v1/auth-check'), (err: unknown) => err instanceof ClientApiError && err.status === status && err.code === code);
      assert.equal(seen.length, 1);
    });
  }

  test('a failed connection is retried with the same Idempotency-Key', async () => {
    const seen: Request[] = [];
    const fetch = (async (input: Request) => {
      seen.push(input);
      if (seen.length === 1) throw new TypeError('fetch failed');
      return ok();
    }) as typeof globalThis.fetch;
    const api = createClient({ baseUrl: 'http://api.invalid', apiKey: 'sk_test_x', fetch });
    await api.POST('/api/v1/auth-check');
    assert.equal(seen.length, 2);
    assert.equal(seen[0]!.headers.get('Idempotency-Key'), seen[1]!.headers.get('Idempotency-Key'));
  });

  test('against the server: a POST whose answer was lost on the way is retried and replayed, one service made', async () => {
    const admin = await apiKey(t.prisma, { brokerId, scopes: ['admin:full'], rateLimit: 10_000 });
    let dropped = 0;
    // The request reaches the server and is carried out; its answer is lost on the way back once.
    const losingFetch = (async (input: Request) => {
      const response = await globalThis.fetch(input);
      if (dropped++ === 0) {
        await response.body?.cancel();
        throw new TypeError('fetch failed: socket hang up');
      }
      return response;
    }) as typeof globalThis.fetch;
    const api = createClient({ baseUrl, apiKey: admin.key, fetch: losingFetch });
    const hostname = 'lost-answer.client.example';
    const { data, response } = await api.POST('/api/v1/service-create', {
      body: { plan: 'Basic VPS', hostname, customer_email: 'ops@client.example' },
    });
    assert.equal(response.headers.get('Idempotent-Replayed'), 'true');
    assert.equal(data!.success, true);
    assert.equal(await t.prisma.service.count({ where: { hostname } }), 1);
  });

  test('retries are bounded (maxRetries), and each POST call gets a key of its own', async () => {
    const { seen, fetch } = scripted([limited('0'), limited('0'), limited('0'), limited('0')]);
    const api = createClient({ baseUrl: 'http://api.invalid', apiKey: 'sk_test_x', fetch, maxRetries: 1 });
    await assert.rejects(api.POST('/api/v1/auth-check'), ClientApiError);
    assert.equal(seen.length, 2);
    await assert.rejects(api.POST('/api/v1/auth-check'), ClientApiError);
    assert.notEqual(seen[0]!.headers.get('Idempotency-Key'), seen[2]!.headers.get('Idempotency-Key'));
  });
});
