/**
 * The sandbox's failure scenarios (issue 46 item 4): each `X-Test-Scenario` answer beside its live
 * twin, a live key meeting the same failure on real records, the envelopes compared whole (the
 * request's own id and the record's id aside); a scenario on an operation it does not apply to is
 * a success; validation comes first; a failure writes nothing; and the sandbox's events for one
 * service number never go on after its `service.cancelled`.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { brokerWithKeys, type BrokerWithEndpoints } from '../helpers/factories.ts';
import { service, serviceRequest } from '../helpers/service-factories.ts';
import { event, webhookEndpoint } from '../helpers/webhook-factories.ts';

let t: TestApp;
let keys: BrokerWithEndpoints;

before(async () => {
  t = await createTestApp();
  keys = await brokerWithKeys(t.prisma, { endpoints: true });
});
after(async () => t?.close());

type Method = 'get' | 'post';

function call(key: string, method: Method, path: string, body?: object, scenario?: string) {
  let req = request(t.app)[method](path).set('Authorization', `Bearer ${key}`);
  if (scenario !== undefined) req = req.set('X-Test-Scenario', scenario);
  return method === 'post' ? req.send(body ?? {}) : req;
}

/** Headers whose value is the request's own (its id, its time, its length, the key's remaining budget). */
const OWN_HEADERS = new Set(['date', 'x-request-id', 'content-length', 'etag', 'ratelimit', 'ratelimit-remaining', 'x-ratelimit-remaining', 'ratelimit-reset', 'x-ratelimit-reset']);

/** The whole answer with the request's id dropped and the record's `id` written `<id>`, to compare with its twin. */
function envelope(res: request.Response, id: string) {
  const { request_id: _requestId, ...error } = (res.body as { error: Record<string, unknown> }).error ?? {};
  const headers = Object.fromEntries(Object.entries(res.headers).filter(([name]) => !OWN_HEADERS.has(name)).sort(([a], [b]) => a.localeCompare(b)));
  return { status: res.status, success: res.body.success, error: JSON.parse(JSON.stringify(error).replaceAll(id, '<id>')) as unknown, headers };
}

interface Twin {
  what: string;
  method: Method;
  /** The live call on a record in the failing state, and the record's id in its answer. */
  live: () => Promise<{ path: string; body?: object; id: string }>;
  /** The sandbox call with the scenario, and the id it names. */
  sandbox: () => Promise<{ path: string; body?: object; id: string }>;
  scenario: string;
  status: number;
  code: string;
}

/** A scenario, and the status and code its live twin answers. */
const CONFLICT = { scenario: 'conflict', status: 409, code: 'conflict' } as const;
const NOT_FOUND = { scenario: 'not_found', status: 404, code: 'not_found' } as const;
const NO_DATA = { scenario: 'no_data', status: 400, code: 'no_data' } as const;

const ghostEndpoint = 'we_000000000000000000000000';
const ghostEvent = 'evt_000000000000000000000000';
const hourAgo = () => new Date(Date.now() - 3_600_000).toISOString();

/** A live service of the broker cancelled, or a number no service of it has. */
async function cancelledService(): Promise<number> {
  return (await service(t, { brokerId: keys.brokerId, status: 'cancelled', cancelledAt: new Date() })).serviceNumber;
}
const NO_SERVICE = 100_000_001;
const SANDBOX_SERVICE = 555_444_333;

const serviceActions: Array<{ action: string; body: object }> = [
  { action: 'password', body: {} },
  { action: 'upgrade', body: { plan: 'Professional VPS' } },
  { action: 'downgrade', body: { plan: 'Basic VPS' } },
  { action: 'cancel', body: { reason: 'No longer needed' } },
];

const twins: Twin[] = [
  ...serviceActions.map(({ action, body }): Twin => ({
    what: `${action} of a cancelled service`,
    method: 'post',
    ...CONFLICT,
    live: async () => {
      const n = await cancelledService();
      return { path: `/api/v1/services/${n}/${action}`, body, id: String(n) };
    },
    sandbox: async () => ({ path: `/api/v1/services/${SANDBOX_SERVICE}/${action}`, body, id: String(SANDBOX_SERVICE) }),
  })),
  ...serviceActions.map(({ action, body }): Twin => ({
    what: `${action} of a service that does not exist`,
    method: 'post',
    ...NOT_FOUND,
    live: async () => ({ path: `/api/v1/services/${NO_SERVICE}/${action}`, body, id: String(NO_SERVICE) }),
    sandbox: async () => ({ path: `/api/v1/services/${SANDBOX_SERVICE}/${action}`, body, id: String(SANDBOX_SERVICE) }),
  })),
  {
    what: 'getService of a service that does not exist',
    method: 'get',
    ...NOT_FOUND,
    live: async () => ({ path: `/api/v1/services/${NO_SERVICE}`, id: String(NO_SERVICE) }),
    sandbox: async () => ({ path: `/api/v1/services/${SANDBOX_SERVICE}`, id: String(SANDBOX_SERVICE) }),
  },
  ...(['approve', 'deny'] as const).map((action): Twin => ({
    what: `a second ${action === 'approve' ? 'approval' : 'denial'} of a request`,
    method: 'post',
    ...CONFLICT,
    live: async () => {
      const decided = await serviceRequest(t.prisma, { brokerId: keys.brokerId, type: 'create', status: action === 'approve' ? 'approved' : 'denied' });
      const id = `REQ-${String(decided.id).padStart(6, '0')}`;
      return { path: `/api/v1/requests/${id}/manage`, body: decision(action), id };
    },
    sandbox: async () => ({ path: '/api/v1/requests/REQ-123450/manage', body: decision(action), id: 'REQ-123450' }),
  })),
  {
    what: 'a decision on a request that does not exist',
    method: 'post',
    ...NOT_FOUND,
    live: async () => ({ path: '/api/v1/requests/REQ-99999999/manage', body: decision('approve'), id: 'REQ-99999999' }),
    sandbox: async () => ({ path: '/api/v1/requests/REQ-123450/manage', body: decision('approve'), id: 'REQ-123450' }),
  },
  {
    what: 'getReport of a report that does not exist',
    method: 'get',
    ...NOT_FOUND,
    live: async () => {
      const id = randomUUID();
      return { path: `/api/v1/reports/${id}`, id };
    },
    sandbox: async () => {
      const id = randomUUID();
      return { path: `/api/v1/reports/${id}`, id };
    },
  },
  {
    what: 'an invoices report of a range without invoices',
    method: 'post',
    ...NO_DATA,
    live: async () => ({ path: '/api/v1/reports/invoices', body: { recipients: ['a@broker.example'], start_date: '1990-01-01', end_date: '1990-01-02' }, id: '-' }),
    sandbox: async () => ({ path: '/api/v1/reports/invoices', body: { recipients: ['a@broker.example'], start_date: '1990-01-01', end_date: '1990-01-02' }, id: '-' }),
  },
  ...(
    [
      ['getWebhookEndpoint', 'get', '', undefined],
      ['listWebhookEndpointDeliveries', 'get', '/deliveries', undefined],
      ['updateWebhookEndpoint', 'post', '', { description: 'Order system' }],
      ['deleteWebhookEndpoint', 'post', '/delete', undefined],
      ['rotateWebhookEndpointSecret', 'post', '/rotate-secret', undefined],
      ['pingWebhookEndpoint', 'post', '/ping', undefined],
      ['sendExampleEvent', 'post', '/send-example', { type: 'ping' }],
      ['getWebhookEndpointStats', 'get', '/stats', undefined],
      ['recoverWebhookEndpoint', 'post', '/recover', { since: 'hour' }],
    ] as const
  ).map(([what, method, tail, body]): Twin => {
    const bodyNow = () => (body && 'since' in body ? { since: hourAgo() } : body);
    return {
      what: `${what} of an endpoint that does not exist`,
      method,
      ...NOT_FOUND,
      live: async () => ({ path: `/api/v1/webhook-endpoints/${ghostEndpoint}${tail}`, body: bodyNow(), id: ghostEndpoint }),
      sandbox: async () => ({ path: `/api/v1/webhook-endpoints/${keys.testEndpoint}${tail}`, body: bodyNow(), id: keys.testEndpoint }),
    };
  }),
  {
    what: 'recover on a disabled endpoint',
    method: 'post',
    ...CONFLICT,
    live: async () => {
      const id = await webhookEndpoint(t.prisma, { brokerId: keys.brokerId, status: 'disabled' });
      return { path: `/api/v1/webhook-endpoints/${id}/recover`, body: { since: hourAgo() }, id };
    },
    sandbox: async () => ({ path: `/api/v1/webhook-endpoints/${keys.testEndpoint}/recover`, body: { since: hourAgo() }, id: keys.testEndpoint }),
  },
  ...(
    [
      ['getEvent', 'get', ''],
      ['redeliverEvent', 'post', '/redeliver'],
    ] as const
  ).map(([what, method, tail]): Twin => ({
    what: `${what} of an event that does not exist`,
    method,
    ...NOT_FOUND,
    live: async () => ({ path: `/api/v1/events/${ghostEvent}${tail}`, id: ghostEvent }),
    sandbox: async () => {
      const id = await event(t.prisma, { brokerId: keys.brokerId, mode: 'test' });
      return { path: `/api/v1/events/${id}${tail}`, id };
    },
  })),
  {
    what: 'a redelivery to a disabled endpoint',
    method: 'post',
    ...CONFLICT,
    live: async () => {
      const endpoint = await webhookEndpoint(t.prisma, { brokerId: keys.brokerId, status: 'disabled' });
      const id = await event(t.prisma, { brokerId: keys.brokerId });
      return { path: `/api/v1/events/${id}/redeliver`, body: { endpoint_id: endpoint }, id: endpoint };
    },
    sandbox: async () => {
      const id = await event(t.prisma, { brokerId: keys.brokerId, mode: 'test' });
      return { path: `/api/v1/events/${id}/redeliver`, body: { endpoint_id: keys.testEndpoint }, id: keys.testEndpoint };
    },
  },
  {
    what: 'getRequestLog of a request that does not exist',
    method: 'get',
    ...NOT_FOUND,
    live: async () => ({ path: '/api/v1/request-logs/req_00000000000000000000000000000000', id: 'req_00000000000000000000000000000000' }),
    sandbox: async () => {
      const earlier = await call(keys.sandbox.key, 'get', '/api/v1/auth-check');
      await t.flushApiLog();
      const id = String(earlier.headers['x-request-id']);
      return { path: `/api/v1/request-logs/${id}`, id };
    },
  },
];

function decision(action: 'approve' | 'deny'): object {
  return action === 'approve' ? { action } : { action, denial_reason: 'Not this time' };
}

/** The broker's newest event (its `seq`), to tell what a call wrote. */
async function lastSeq(): Promise<bigint> {
  const last = await t.prisma.event.findFirst({ where: { brokerId: keys.brokerId }, orderBy: { seq: 'desc' }, select: { seq: true } });
  return last?.seq ?? -1n;
}

describe('each failure scenario answers what its live twin answers', () => {
  for (const twin of twins) {
    test(`${twin.scenario}: ${twin.what}`, async () => {
      const live = await twin.live();
      const liveRes = await call(keys.live.key, twin.method, live.path, live.body);
      const sandbox = await twin.sandbox();
      const before = await lastSeq();
      const sandboxRes = await call(keys.sandbox.key, twin.method, sandbox.path, sandbox.body, twin.scenario.toUpperCase());
      assert.equal(liveRes.status, twin.status, `the live twin: ${liveRes.text}`);
      assert.equal(liveRes.body.error.code, twin.code);
      assert.deepEqual(envelope(sandboxRes, sandbox.id), envelope(liveRes, live.id));
      assert.equal(await lastSeq(), before, 'a refused call writes no event');
    });
  }
});

describe('a recipient_failed report beside a live report whose only recipient fails', () => {
  test('the same answer, the same run for getReport and listReports, the same report.completed', async () => {
    const body = { status: 'active' };
    const liveRes = await call(keys.live.key, 'post', '/api/v1/reports/services', { ...body, recipients: ['nobody@failed.test'] });
    const sandboxRes = await call(keys.sandbox.key, 'post', '/api/v1/reports/services', { ...body, recipients: ['ops@broker.example'] }, 'recipient_failed');
    assert.equal(liveRes.status, 200, liveRes.text);
    assert.equal(sandboxRes.status, 200, sandboxRes.text);
    const counts = (d: Record<string, number>) => [d.recipients_sent, d.recipients_failed, d.recipients_pending];
    assert.deepEqual(counts(sandboxRes.body.data), counts(liveRes.body.data));
    assert.deepEqual(counts(sandboxRes.body.data), [0, 1, 0]);

    const runOf = async (key: string, id: string) => {
      const res = await call(key, 'get', `/api/v1/reports/${id}`);
      assert.equal(res.status, 200, res.text);
      return res.body.data as Record<string, unknown> & { recipients: Array<Record<string, unknown>> };
    };
    const liveRun = await runOf(keys.live.key, liveRes.body.data.report_id);
    const sandboxRun = await runOf(keys.sandbox.key, sandboxRes.body.data.report_id);
    const shape = (run: typeof liveRun) => ({
      status: run.status,
      counts: [run.recipients_sent, run.recipients_failed, run.recipients_pending],
      recipients: run.recipients.map((r) => [r.status, r.attempts, String(r.last_error).slice(0, 10), r.sent_at]),
      keys: Object.keys(run).filter((k) => !['mode', 'simulated'].includes(k)),
    });
    assert.deepEqual(shape(sandboxRun), shape(liveRun));
    assert.deepEqual(shape(sandboxRun).recipients, [['failed', 1, '550 5.1.1 ', null]]);

    const listed = await call(keys.sandbox.key, 'get', '/api/v1/reports');
    const row = (listed.body.data as Array<Record<string, unknown>>).find((r) => r.report_id === sandboxRun.report_id);
    assert.deepEqual([row?.status, row?.recipients_failed], ['completed', 1], 'listReports tells the same run');

    const endOf = async (key: string, id: string) => {
      const res = await call(key, 'get', '/api/v1/events?limit=100');
      return (res.body.data as Array<{ type: string; data: { object: { report_id?: string } } }>).filter((e) => e.data.object.report_id === id);
    };
    const liveEvents = await endOf(keys.live.key, liveRun.report_id as string);
    const sandboxEvents = await endOf(keys.sandbox.key, sandboxRun.report_id as string);
    assert.deepEqual(sandboxEvents.map((e) => e.type), liveEvents.map((e) => e.type));
    assert.deepEqual(sandboxEvents.map((e) => e.type), ['report.completed']);
    assert.deepEqual(sandboxEvents[0]!.data.object, sandboxRun, 'the event tells the run getReport answers');
  });

  test('an invoices report too: every recipient failed, the run completed', async () => {
    const res = await call(keys.sandbox.key, 'post', '/api/v1/reports/invoices', { recipients: ['a@broker.example', 'b@broker.example'], start_date: '2025-01-01', end_date: '2025-01-31' }, 'recipient_failed');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual([res.body.data.recipients_sent, res.body.data.recipients_failed, res.body.data.recipients_pending], [0, 2, 0]);
    const run = await call(keys.sandbox.key, 'get', `/api/v1/reports/${res.body.data.report_id}`);
    assert.deepEqual([run.body.data.status, run.body.data.recipients.map((r: { status: string }) => r.status)], ['completed', ['failed', 'failed']]);
  });
});

describe('where a scenario does not apply, or cannot yet', () => {
  test('on an operation it does not apply to, a failure scenario is the normal success', async () => {
    const cases: Array<[string, Method, string, object | undefined, number]> = [
      ['conflict', 'get', `/api/v1/services/${SANDBOX_SERVICE}`, undefined, 200],
      ['not_found', 'get', '/api/v1/services', undefined, 200],
      ['no_data', 'post', '/api/v1/reports/services', { recipients: ['a@broker.example'] }, 200],
      ['recipient_failed', 'post', `/api/v1/services/${SANDBOX_SERVICE + 1}/upgrade`, { plan: 'Standard VPS' }, 202],
      ['conflict', 'post', `/api/v1/events/${await event(t.prisma, { brokerId: keys.brokerId, mode: 'test' })}/redeliver`, {}, 200],
      ['not_found', 'get', '/api/v1/auth-check', undefined, 200],
    ];
    for (const [scenario, method, path, body, status] of cases) {
      const res = await call(keys.sandbox.key, method, path, body, scenario);
      assert.equal(res.status, status, `${scenario} ${path}: ${res.text}`);
    }
  });

  test('validation comes first: a malformed request gets its own 400', async () => {
    const res = await call(keys.sandbox.key, 'post', '/api/v1/services/not-a-number/upgrade', { plan: 'Professional VPS' }, 'not_found');
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.code, 'invalid_parameter');
    const dates = await call(keys.sandbox.key, 'post', '/api/v1/reports/invoices', { recipients: ['a@broker.example'], start_date: '2025-02-01', end_date: '2025-01-01' }, 'no_data');
    assert.deepEqual([dates.status, dates.body.error.code], [400, 'invalid_parameter']);
  });

  test('live keys ignore the header', async () => {
    const n = (await service(t, { brokerId: keys.brokerId })).serviceNumber;
    const res = await call(keys.live.key, 'get', `/api/v1/services/${n}`, undefined, 'not_found');
    assert.equal(res.status, 200, res.text);
  });
});

describe('the sandbox invoices report adds up to its range', () => {
  test('a two-day range has two invoices, a month the twelve documented', async () => {
    const totals = async (start: string, end: string) => {
      const res = await call(keys.sandbox.key, 'post', '/api/v1/reports/invoices', { recipients: ['a@broker.example'], start_date: start, end_date: end });
      assert.equal(res.status, 200, res.text);
      return [res.body.data.total_invoices, res.body.data.paid_invoices, res.body.data.unpaid_invoices];
    };
    assert.deepEqual(await totals('1990-01-01', '1990-01-02'), [2, 2, 0]);
    assert.deepEqual(await totals('2025-01-01', '2025-01-01'), [1, 1, 0]);
    assert.deepEqual(await totals('2025-01-01', '2025-01-08'), [8, 6, 2]);
    assert.deepEqual(await totals('2025-01-01', '2025-01-31'), [12, 9, 3]);
    assert.deepEqual(await totals('2024-01-01', '2025-12-31'), [12, 9, 3]);
  });
});

describe('simulated events never go on after a service.cancelled', () => {
  test('once the sandbox cancelled a number, its changes are refused as live refuses them and write nothing', async () => {
    const asked = await call(keys.sandbox.key, 'post', '/api/v1/services/777666555/cancel', { reason: 'Done', when: 'immediate' });
    assert.equal(asked.status, 202, asked.text);
    const upgrade = await call(keys.sandbox.key, 'post', '/api/v1/services/777666555/upgrade', { plan: 'Professional VPS' });
    assert.equal(upgrade.status, 202, 'before the cancellation is approved, a change may still be asked for');
    const approved = await call(keys.sandbox.key, 'post', `/api/v1/requests/${asked.body.data.request_id}/manage`, { action: 'approve' });
    assert.equal(approved.status, 200, approved.text);

    const before = await lastSeq();
    const refused = await Promise.all([
      call(keys.sandbox.key, 'post', `/api/v1/requests/${upgrade.body.data.request_id}/manage`, { action: 'approve' }),
      call(keys.sandbox.key, 'post', `/api/v1/requests/${asked.body.data.request_id}/manage`, { action: 'approve' }),
      call(keys.sandbox.key, 'post', '/api/v1/services/777666555/password', {}),
      call(keys.sandbox.key, 'post', '/api/v1/services/777666555/downgrade', { plan: 'Basic VPS' }),
      call(keys.sandbox.key, 'post', '/api/v1/services/777666555/cancel', { reason: 'Again' }),
    ]);
    for (const res of refused) assert.deepEqual([res.status, res.body.error?.code, res.body.error?.details?.current_status], [409, 'conflict', 'cancelled'], res.text);
    assert.equal(await lastSeq(), before, 'no event after the cancellation');

    // The live twin of the approval's refusal: an upgrade request of a service cancelled since.
    const cancelled = await service(t, { brokerId: keys.brokerId, status: 'cancelled', cancelledAt: new Date() });
    const open = await serviceRequest(t.prisma, { brokerId: keys.brokerId, type: 'upgrade', service: cancelled, requestedPlan: 'Professional VPS' });
    const liveId = `REQ-${String(open.id).padStart(6, '0')}`;
    const live = await call(keys.live.key, 'post', `/api/v1/requests/${liveId}/manage`, { action: 'approve' });
    assert.deepEqual(envelope(refused[0]!, '777666555'), envelope(live, String(cancelled.serviceNumber)));

    const events = await t.prisma.event.findMany({ where: { brokerId: keys.brokerId, mode: 'test' }, orderBy: { seq: 'asc' }, select: { type: true, data: true } });
    const ofService = events.filter((e) => (e.data as { object: { service_number?: number; object?: string } }).object.object === 'service' && (e.data as { object: { service_number?: number } }).object.service_number === 777666555);
    assert.deepEqual(ofService.map((e) => e.type), ['service.cancelled']);
  });
});
