/**
 * Shared harness of the property-based (fuzz) tests: one app on its own database and Redis, served
 * on a real loopback socket (so raw bytes, odd paths and odd headers reach it exactly as sent), a
 * raw HTTP client, the properties every answer must have, and a fingerprint of every table a
 * request could change, so a test can prove that a request changed nothing: nothing at all
 * (assertUnchanged), or nothing but the test-mode events a sandbox change simulates and the
 * deliveries they owe to test-mode endpoints (assertOnlySimulated).
 *
 * Seeds are fixed (FUZZ_SEED overrides; FUZZ_RUNS scales the run counts) and fast-check prints the
 * seed and the counterexample of any failure, so every failure can be replayed.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import fc from 'fast-check';
import type { AddressInfo } from 'node:net';
import { ERROR_STATUS } from '../../src/http/errors.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, broker, requestLog } from '../helpers/factories.ts';
import { service, serviceRequest } from '../helpers/service-factories.ts';
import { event, webhookEndpoint } from '../helpers/webhook-factories.ts';
import { FUZZ_REQUEST_LOG_ID } from './arbitraries.ts';
import { answerClientErrorsInEnvelope } from '../../src/http/client-errors.ts';

export const SEED = Number(process.env.FUZZ_SEED ?? 20261122);
const RUN_SCALE = Number(process.env.FUZZ_RUNS_SCALE ?? 1);
/** A bounded number of runs, scaled by FUZZ_RUNS_SCALE (e.g. 10 for a long soak). */
export const runs = (n: number): number => Math.max(1, Math.round(n * RUN_SCALE));

/** fast-check parameters every property uses: fixed seed, bounded runs and time. */
export function fcParams(numRuns: number): fc.Parameters<unknown> {
  return {
    seed: SEED,
    numRuns: runs(numRuns),
    // A property that has not made all its runs in this time fails (it never passes on fewer runs than
    // asked, as it did on a loaded machine); a failure is shrunk until then and reported with the best
    // counterexample so far. Below the suite's 300 s per test (scripts/test.mjs).
    plugins: [fc.interruptAfterTimeLimit(240_000, { failOnInterrupt: true })],
    // The assertion's own message (what was wrong with the answer) in the failure report.
    includeErrorInReport: true,
  };
}

export const ERROR_CODES = new Set(Object.keys(ERROR_STATUS));

export type KeyKind = 'live' | 'sandbox';

export interface RawRequest {
  method: string;
  /** Sent exactly as given (path and query), so invalid percent-encoding reaches the server. */
  path: string;
  headers?: Record<string, string | string[]>;
  body?: Buffer | string;
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: unknown;
  ms: number;
}

export interface FuzzWorld {
  t: TestApp;
  baseUrl: string;
  /** The fuzz broker: every key's. */
  brokerId: string;
  /** Its webhook endpoints, one of each mode, enabled, taking every event type. */
  endpoints: Record<'live' | 'test', string>;
  keys: Record<KeyKind, string>;
  /** A live key with one read scope only (scope refusals come before validation). */
  readerKey: string;
  /** Service numbers of the fuzz broker that exist (so a 404 is never what rejects a request). */
  serviceNumbers: number[];
  /** Ids (REQ-…) of pending requests of the fuzz broker. */
  requestIds: string[];
  /** Webhook endpoints and events of the fuzz broker, live ones for the live key, test-mode ones for the sandbox key. */
  endpointIds: Record<KeyKind, string[]>;
  eventIds: Record<KeyKind, string[]>;
  /** Request log entries of the fuzz broker, of each key's mode. */
  requestLogIds: Record<KeyKind, string[]>;
  /** Report runs of the fuzz broker, of each key's mode. */
  reportIds: Record<KeyKind, string[]>;
  send(req: RawRequest): Promise<RawResponse>;
  snapshot(): Promise<Snapshot>;
  close(): Promise<void>;
}

/** Bound on one answer: a request that takes longer is reported as a hang. */
const REQUEST_TIMEOUT_MS = 15_000;

/**
 * Sets up the world: an app with response validation on (contract drift would surface as a 500), a
 * broker with services, pending requests and invoices, and admin:full keys (live and sandbox) with
 * a rate limit high enough never to be reached by the fuzzer.
 */
export async function startFuzzWorld(): Promise<FuzzWorld> {
  // A live report that slipped through validation would wait for its e-mail; keep that short.
  const t = await createTestApp({ reportWaitMs: 1000 }, { workers: false });
  try {
    const brk = await broker(t.prisma, { approval: 'automatic' });
    const big = 1_000_000_000;
    const live = await apiKey(t.prisma, { brokerId: brk.id, mode: 'live', scopes: ['admin:full'], rateLimit: big });
    const sandbox = await apiKey(t.prisma, { brokerId: brk.id, mode: 'test', scopes: ['admin:full'], rateLimit: big });
    const reader = await apiKey(t.prisma, { brokerId: brk.id, mode: 'live', scopes: ['services:read'], rateLimit: big });
    const serviceNumbers: number[] = [];
    const requestIds: string[] = [];
    const statuses = ['active', 'active', 'suspended', 'pending', 'cancelled'] as const;
    for (const [i, status] of statuses.entries()) {
      const s = await service(t, { brokerId: brk.id, status, plan: i % 2 === 0 ? 'Standard VPS' : 'Professional VPS' });
      serviceNumbers.push(s.serviceNumber);
      if (status === 'active' && i === 1) {
        const r = await serviceRequest(t.prisma, { brokerId: brk.id, type: 'upgrade', service: s, requestedPlan: 'Enterprise VPS' });
        requestIds.push(`REQ-${String(r.id).padStart(6, '0')}`);
      }
    }
    const created = await serviceRequest(t.prisma, { brokerId: brk.id, type: 'create', requestedPlan: 'Basic VPS' });
    // Simulated events owe deliveries to the test-mode endpoint only; the live one is owed nothing.
    const endpoints = {
      live: await webhookEndpoint(t.prisma, { brokerId: brk.id, mode: 'live' }),
      test: await webhookEndpoint(t.prisma, { brokerId: brk.id, mode: 'test' }),
    };
    requestIds.push(`REQ-${String(created.id).padStart(6, '0')}`);
    await t.prisma.invoice.createMany({
      data: Array.from({ length: 6 }, (_, i) => ({
        brokerId: brk.id,
        number: `INV-FUZZ-${i}`,
        serviceNumber: serviceNumbers[i % serviceNumbers.length]!,
        amount: '19.90',
        currency: 'EUR',
        status: i % 3 === 0 ? ('pending' as const) : ('paid' as const),
        date: new Date(Date.UTC(2025, 0, 1 + i * 5)),
      })),
    });

    const endpointIds: Record<KeyKind, string[]> = { live: [], sandbox: [] };
    const eventIds: Record<KeyKind, string[]> = { live: [], sandbox: [] };
    const reportIds: Record<KeyKind, string[]> = { live: [], sandbox: [] };
    for (const [kind, mode] of [['live', 'live'], ['sandbox', 'test']] as const) {
      endpointIds[kind].push(await webhookEndpoint(t.prisma, { brokerId: brk.id, mode }));
      eventIds[kind].push(await event(t.prisma, { brokerId: brk.id, mode }));
      reportIds[kind].push((await t.prisma.reportRun.create({ data: { brokerId: brk.id, mode, reportType: 'services', status: 'completed' } })).id);
    }
    const logged = { requestId: FUZZ_REQUEST_LOG_ID };
    const requestLogIds: Record<KeyKind, string[]> = { live: [await requestLog(t.prisma, live, logged)], sandbox: [await requestLog(t.prisma, sandbox, logged)] };

    const server = http.createServer(t.app);
    answerClientErrorsInEnvelope(server); // as src/main/server.ts does for the real listener
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

    const send = (req: RawRequest): Promise<RawResponse> =>
      new Promise((resolve, reject) => {
        const started = performance.now();
        const body = req.body === undefined ? undefined : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body, 'utf8');
        const headers: Record<string, string | string[] | number> = { ...(req.headers ?? {}) };
        if (body !== undefined) headers['Content-Length'] = body.length;
        const r = http.request(
          { host: '127.0.0.1', port, method: req.method, path: req.path, headers, agent, timeout: REQUEST_TIMEOUT_MS },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('error', reject);
            res.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              let json: unknown;
              try {
                json = text === '' ? undefined : JSON.parse(text);
              } catch {
                json = undefined;
              }
              resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json, ms: performance.now() - started });
            });
          },
        );
        r.on('timeout', () => r.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms (hang): ${req.method} ${req.path.slice(0, 200)}`)));
        r.on('error', reject);
        r.end(body);
      });

    return {
      t,
      baseUrl: `http://127.0.0.1:${port}`,
      brokerId: brk.id,
      endpoints,
      keys: { live: live.key, sandbox: sandbox.key },
      readerKey: reader.key,
      serviceNumbers,
      requestIds,
      endpointIds,
      eventIds,
      requestLogIds,
      reportIds,
      send,
      snapshot: () => snapshot(t),
      close: async () => {
        agent.destroy();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await t.close();
      },
    };
  } catch (err) {
    await t.close();
    throw err;
  }
}

/**
 * Every table a request could change, each as a row source, with the columns a request may
 * legitimately change (none but last use). Events and their deliveries are split by mode: a
 * sandbox change writes test-mode events (assertOnlySimulated), never a live one.
 */
const TABLES: Array<[name: string, rows: string, ignored: string[]]> = [
  ['brokers', 'brokers', []],
  ['api_keys', 'api_keys', ['last_used_at']],
  ['plans', 'plans', []],
  ['services', 'services', []],
  ['service_requests', 'service_requests', []],
  ['invoices', 'invoices', []],
  ['report_runs', `(SELECT * FROM report_runs WHERE mode = 'live')`, []],
  ['report_recipients', `(SELECT r.* FROM report_recipients r JOIN report_runs run ON run.id = r.report_run_id WHERE run.mode = 'live')`, []],
  // A refused request writes no event either (events are written with their change).
  ['events', `(SELECT * FROM events WHERE mode = 'live')`, []],
  ['webhook_endpoints', 'webhook_endpoints', []],
  ['webhook_deliveries', `(SELECT d.* FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE e.mode = 'live')`, []],
  ['webhook_attempts', 'webhook_attempts', []],
  // What a sandbox change may add (and nothing else may).
  ['test_events', `(SELECT * FROM events WHERE mode = 'test')`, []],
  ['test_webhook_deliveries', `(SELECT d.* FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE e.mode = 'test')`, []],
  // A sandbox report is recorded as a test-mode run (src/reports/sandbox.ts).
  ['test_report_runs', `(SELECT * FROM report_runs WHERE mode = 'test')`, []],
  ['test_report_recipients', `(SELECT r.* FROM report_recipients r JOIN report_runs run ON run.id = r.report_run_id WHERE run.mode = 'test')`, []],
];
const SIMULATED_TABLES = new Set(['test_events', 'test_webhook_deliveries', 'test_report_runs', 'test_report_recipients']);

export interface Snapshot {
  /** Row count and an md5 of every row (as JSON, minus ignored columns) of each table of TABLES. */
  tables: Record<string, string>;
  /** The newest test-mode event's `seq` (-1: none): simulated events written later come after it. */
  lastTestEvent: bigint;
}

export async function snapshot(t: TestApp): Promise<Snapshot> {
  const parts = TABLES.map(([name, rows, ignored]) => {
    const row = ignored.reduce((expr, column) => `(${expr} - '${column}')`, 'to_jsonb(x)');
    return `(SELECT count(*)::text || ':' || coalesce(md5(string_agg(${row}::text, ',' ORDER BY ${row}::text)), '') FROM ${rows} x) AS ${name}`;
  });
  const [tables] = await t.prisma.$queryRawUnsafe<Array<Record<string, string>>>(`SELECT ${parts.join(', ')}`);
  const last = await t.prisma.event.findFirst({ where: { mode: 'test' }, orderBy: { seq: 'desc' }, select: { seq: true } });
  return { tables: tables!, lastTestEvent: last?.seq ?? -1n };
}

/** What the request was, for the checks that depend on it. */
export interface Sent {
  kind: KeyKind | 'none' | 'reader';
  /** The X-Test-Scenario header as sent, if any. */
  scenario?: string | undefined;
}

/** A stack frame, a file path of ours or of node_modules: never in a response. */
const STACK_MARKERS = [/(\\n|\n)\s+at /, /\bat [\w.<>]+ \(/, /node_modules/, /\/src\/[\w/-]+\.ts/, /file:\/\//];

/** The sandbox `server_error` scenario: the one 500 a correct server gives on purpose. */
export const isServerErrorScenario = (sent: Sent): boolean =>
  sent.kind === 'sandbox' && sent.scenario !== undefined && sent.scenario.trim().toLowerCase() === 'server_error';

/**
 * The properties of every answer under /api: JSON with the envelope, an error code of openapi.yaml's
 * list with the status that code has, a string message, no stack trace, a request id, and never a
 * 5xx (except the sandbox `server_error` scenario, which must then be exactly that).
 */
export function assertApiAnswer(res: RawResponse, sent: Sent, what: string): void {
  const ctx = `${what} → ${res.status} ${res.text.slice(0, 300)}`;
  if (res.status >= 500) {
    assert.ok(isServerErrorScenario(sent), `5xx outside the sandbox server_error scenario: ${ctx}`);
  }
  assert.ok(res.status >= 200 && res.status < 600, `odd status: ${ctx}`);
  assert.match(String(res.headers['content-type'] ?? ''), /^application\/json\b/, `content-type: ${ctx}`);
  assert.ok(typeof res.headers['x-request-id'] === 'string' && res.headers['x-request-id'] !== '', `X-Request-Id missing: ${ctx}`);
  assert.ok(res.json !== undefined && typeof res.json === 'object' && res.json !== null, `not a JSON object: ${ctx}`);
  const body = res.json as { success?: unknown; data?: unknown; error?: { code?: unknown; message?: unknown; details?: unknown } };
  assert.equal(typeof body.success, 'boolean', `success not a boolean: ${ctx}`);
  if (res.status < 400) {
    assert.equal(body.success, true, `2xx without success: true: ${ctx}`);
    assert.ok('data' in body, `success without data: ${ctx}`);
  } else {
    assert.equal(body.success, false, `error status with success: true: ${ctx}`);
    assert.ok(body.error && typeof body.error === 'object', `error object missing: ${ctx}`);
    const code = body.error.code;
    assert.ok(typeof code === 'string' && ERROR_CODES.has(code), `error.code not in the spec's list: ${ctx}`);
    assert.equal(ERROR_STATUS[code as keyof typeof ERROR_STATUS], res.status, `status does not match error.code: ${ctx}`);
    assert.equal(typeof body.error.message, 'string', `error.message not a string: ${ctx}`);
    if (body.error.details !== undefined) {
      assert.ok(typeof body.error.details === 'object' && body.error.details !== null && !Array.isArray(body.error.details), `details not an object: ${ctx}`);
    }
    if (res.status === 500) assert.equal(code, 'server_error', ctx);
  }
  for (const marker of STACK_MARKERS) assert.doesNotMatch(res.text, marker, `stack trace or internal path leaked: ${ctx}`);
}

/** Data must be exactly as before, test-mode events included. */
export function assertUnchanged(before: Snapshot, after: Snapshot, what: string): void {
  for (const table of Object.keys(before.tables)) {
    assert.equal(after.tables[table], before.tables[table], `table ${table} changed after ${what}`);
  }
  assert.equal(after.lastTestEvent, before.lastTestEvent, `a test-mode event was written after ${what}`);
}

type Data = Record<string, unknown>;

/**
 * The events a sandbox answer tells of (src/services/sandbox.ts, src/requests/sandbox.ts,
 * src/reports/sandbox.ts), as the live operation writes them, and which of them carries the
 * answer's own object (plus `simulated: true`); none for any other answer.
 */
function simulatedEvents(operationId: string | undefined, status: number, data: Data): { types: string[]; answerAt?: number } {
  switch (operationId) {
    case 'createService':
      return status === 200 ? { types: ['service.created', 'request.created'], answerAt: 0 } : { types: ['request.created'], answerAt: 0 };
    case 'updateServicePassword':
      return { types: ['service.updated'] };
    case 'upgradeService':
    case 'downgradeService':
    case 'cancelService':
      return { types: ['request.created'], answerAt: 0 };
    case 'manageRequest':
      // An approval waiting for the provider's review (202) is neither approved nor denied: no event.
      if (status === 202) return { types: [] };
      return { types: data.request_status === 'approved' ? ['request.approved', 'service.created'] : ['request.denied'], answerAt: 0 };
    case 'sendInvoicesReport':
    case 'sendServicesReport':
      // A run with a recipient still pending (a reserved pending.test address) has not ended: no event yet.
      return { types: data.recipients_pending === 0 ? ['report.completed'] : [] };
    default:
      return { types: [] };
  }
}

/**
 * Data exactly as before, but for what a sandbox change simulates: when `answer` is a sandbox
 * key's 2xx to an operation that simulates a change (and not a replay), exactly the test-mode
 * events its live twin would write, of the fuzz broker, `simulated`, without credentials, the
 * answer's own object among them, each owed to the broker's enabled test-mode endpoints only. Live tables, live
 * events and what they owe are unchanged in every case.
 */
export async function assertOnlySimulated(w: FuzzWorld, before: Snapshot, answer: { req: RawRequest; res: RawResponse; sent: Sent }, what: string): Promise<void> {
  const after = await w.snapshot();
  for (const table of Object.keys(before.tables).filter((name) => !SIMULATED_TABLES.has(name))) {
    assert.equal(after.tables[table], before.tables[table], `table ${table} changed after ${what}`);
  }
  const { req, res, sent } = answer;
  const data = ((res.json as { data?: unknown } | undefined)?.data ?? {}) as Data;
  const simulates = sent.kind === 'sandbox' && res.status >= 200 && res.status < 300 && res.headers['idempotent-replayed'] === undefined;
  const operation = w.t.deps.contract.match(req.method, req.path.split('?')[0]!)?.operationId;
  const expected = simulates ? simulatedEvents(operation, res.status, data) : { types: [] };
  const events = await w.t.prisma.event.findMany({ where: { mode: 'test', seq: { gt: before.lastTestEvent } }, orderBy: { seq: 'asc' }, include: { deliveries: true } });
  const testEndpoints = (await w.t.prisma.webhookEndpoint.findMany({ where: { brokerId: w.brokerId, mode: 'test', status: 'enabled' }, select: { id: true } })).map((e) => e.id).sort();
  assert.ok(testEndpoints.includes(w.endpoints.test));
  assert.deepEqual(events.map((e) => e.type), expected.types, `test-mode events written after ${what} → ${res.status} ${res.text.slice(0, 300)}`);
  for (const e of events) {
    const object = (e.data as { object: Data }).object;
    assert.equal(e.brokerId, w.brokerId, `${e.type}: the key's broker (${what})`);
    assert.equal(object.simulated, true, `${e.type} not marked simulated (${what})`);
    assert.ok(!('credentials' in object) && !('password' in object), `${e.type} carries a credential (${what})`);
    assert.deepEqual(e.deliveries.map((d) => d.endpointId).sort(), testEndpoints, `${e.type} owed to the broker's enabled test-mode endpoints only (${what})`);
  }
  if (typeof data.password === 'string') assert.ok(!JSON.stringify(events.map((e) => e.data)).includes(data.password), `the password in an event (${what})`);
  if (expected.answerAt !== undefined) {
    const object = (events[expected.answerAt]!.data as { object: Data }).object;
    assert.deepEqual(object, { ...data, simulated: true }, `the event's object is the answer's (${what})`);
  }
  if (operation === 'updateServicePassword' && events[0]) assert.equal((events[0].data as { object: Data }).object.service_number, data.service_number, what);
  if (operation?.startsWith('send') && events[0]) assert.equal((events[0].data as { object: Data }).object.report_id, data.report_id, what);
}

/** A short description of a request for failure messages (bodies are cut). */
export function describeRequest(req: RawRequest): string {
  const body = req.body === undefined ? '' : ` body(${req.body.length}): ${String(Buffer.isBuffer(req.body) ? req.body.toString('latin1') : req.body).slice(0, 300)}`;
  const headers = Object.entries(req.headers ?? {})
    .filter(([name]) => name.toLowerCase() !== 'authorization')
    .map(([name, value]) => `${name}: ${String(value).slice(0, 80)}`)
    .join('; ');
  return `${req.method} ${req.path.slice(0, 300)} [${headers}]${body}`;
}
