/**
 * Shared harness of the property-based (fuzz) tests: one app on its own database and Redis, served
 * on a real loopback socket (so raw bytes, odd paths and odd headers reach it exactly as sent), a
 * raw HTTP client, the properties every answer must have, and a fingerprint of every business
 * table so a test can prove that a request changed nothing.
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
import { apiKey, broker } from '../helpers/factories.ts';
import { service, serviceRequest } from '../helpers/service-factories.ts';
import { event, webhookEndpoint } from '../helpers/webhook-factories.ts';
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
    // A failure is shrunk for a while, then reported with the best counterexample so far.
    plugins: [fc.interruptAfterTimeLimit(60_000)],
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
  send(req: RawRequest): Promise<RawResponse>;
  snapshot(): Promise<Record<string, string>>;
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
    for (const [kind, mode] of [['live', 'live'], ['sandbox', 'test']] as const) {
      endpointIds[kind].push(await webhookEndpoint(t.prisma, { brokerId: brk.id, mode }));
      eventIds[kind].push(await event(t.prisma, { brokerId: brk.id, mode }));
    }

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
      keys: { live: live.key, sandbox: sandbox.key },
      readerKey: reader.key,
      serviceNumbers,
      requestIds,
      endpointIds,
      eventIds,
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

/** Every business table, and the columns a request may legitimately change (none but last use). */
const TABLES: Array<[table: string, ignored: string[]]> = [
  ['brokers', []],
  ['api_keys', ['last_used_at']],
  ['plans', []],
  ['services', []],
  ['service_requests', []],
  ['invoices', []],
  ['report_runs', []],
  ['report_recipients', []],
  // A refused request writes no event either (events are written with their change).
  ['events', []],
  ['webhook_endpoints', []],
  ['webhook_deliveries', []],
  ['webhook_attempts', []],
];

/** Row count and an md5 of every row (as JSON, minus ignored columns) of each business table. */
export async function snapshot(t: TestApp): Promise<Record<string, string>> {
  const parts = TABLES.map(([table, ignored]) => {
    const row = ignored.reduce((expr, column) => `(${expr} - '${column}')`, 'to_jsonb(x)');
    return `(SELECT count(*)::text || ':' || coalesce(md5(string_agg(${row}::text, ',' ORDER BY ${row}::text)), '') FROM ${table} x) AS ${table}`;
  });
  const rows = await t.prisma.$queryRawUnsafe<Array<Record<string, string>>>(`SELECT ${parts.join(', ')}`);
  return rows[0]!;
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

/** Data must be exactly as before. */
export function assertUnchanged(before: Record<string, string>, after: Record<string, string>, what: string): void {
  for (const table of Object.keys(before)) {
    assert.equal(after[table], before[table], `table ${table} changed after ${what}`);
  }
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
