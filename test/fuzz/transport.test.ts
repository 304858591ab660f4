/**
 * Property-based tests below the operations: any method on any path under /api (known templates
 * with hostile parameters, invalid percent-encoding, dot segments, case changes), any query, raw
 * body bytes (invalid UTF-8, deep nesting, over 1 MiB, past the body bounds) and any Authorization header.
 *
 * - never a 5xx, always the envelope, never a stack trace, no data changed (live and sandbox; a
 *   valid sandbox change only its simulated test-mode events);
 * - without a valid key nothing gets past the gate: 404 (unknown path) or 401.
 *
 * Replay a failure with FUZZ_SEED=<seed printed by fast-check>.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { holdsKey } from '../../src/ops/redact.ts';
import { BAD_ESCAPES, encode, headerText, hostileString, OPERATIONS, queryString } from './arbitraries.ts';
import {
  assertApiAnswer,
  assertOnlySimulated,
  assertUnchanged,
  describeRequest,
  fcParams,
  startFuzzWorld,
  type FuzzWorld,
  type RawRequest,
  type Sent,
} from './harness.ts';

let w: FuzzWorld;

before(async () => {
  w = await startFuzzWorld();
});
after(async () => {
  await w?.close();
});

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'];

const segment: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('v1', 'V1', 'services', 'requests', 'auth-check', 'service-create', 'reports', 'invoices', 'manage', 'cancel', '..', '.', '', '%2e%2e', '%2F', 'REQ-1', '123456789', '0'),
  fc.constantFrom(...BAD_ESCAPES),
  hostileString.map((s) => encode(s).slice(0, 300)),
);

/** Paths under /api: contract templates with any parameter, or any segments. */
const apiPath: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(fc.constantFrom(...OPERATIONS), segment, fc.constantFrom('', '/', '//', '/.', '/..', '/x')).map(([op, p, tail]) => op.template.replace(/\{[^}]+\}/, p) + tail),
  fc.tuple(fc.constantFrom('/api', '/API', '/api/', '/Api/v1', '/api/v1', '/api//v1', '/api/v2', '/api/v1/.', '/api/v1/services/..'), fc.array(segment, { maxLength: 4 })).map(
    ([prefix, segs]) => [prefix, ...segs].join('/'),
  ),
);

type Auth = { kind: 'live' | 'sandbox' } | { kind: 'none' } | { kind: 'garbage'; header: string };

const auth: fc.Arbitrary<Auth> = fc.oneof(
  fc.constantFrom<Auth>({ kind: 'live' }, { kind: 'sandbox' }, { kind: 'none' }),
  fc.oneof(
    headerText(300),
    fc.constantFrom('Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'Bearer sk_live_', 'Bearer sk_test_', 'Bearer sk_live_x', 'Bearer null', 'Bearer undefined', "Bearer ' OR 1=1 --", 'Bearer sk_live_%00'),
    fc.tuple(fc.constantFrom('Bearer sk_live_', 'Bearer sk_test_', 'bearer sk_live_', 'Bearer  sk_test_'), headerText(100)).map(([a, b]) => a + b),
  ).map((header): Auth => ({ kind: 'garbage', header })),
);

/** Raw bodies: random bytes, invalid UTF-8 inside JSON, deep nesting, over 1 MiB. */
const rawBody: fc.Arbitrary<Buffer | undefined> = fc.oneof(
  fc.constant(undefined),
  fc.uint8Array({ maxLength: 500 }).map((b) => Buffer.from(b)),
  fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 40 }), fc.constantFrom('{"plan":"', '{"recipients":["', '{"reason":"', '{"', '["')).map(([b, head]) =>
    Buffer.concat([Buffer.from(head), Buffer.from(b), Buffer.from('"}')]),
  ),
  fc.tuple(fc.integer({ min: 1000, max: 5000 }), fc.boolean()).map(([n, arrays]) => Buffer.from(arrays ? '['.repeat(n) + ']'.repeat(n) : '{"a":'.repeat(n) + '1' + '}'.repeat(n))),
  fc.integer({ min: 1024 * 1024 - 64, max: 1536 * 1024 }).map((n) => Buffer.from(`{"x":"${'A'.repeat(n)}"}`)),
);

const transportRequest = fc.record({
  method: fc.constantFrom(...METHODS),
  path: apiPath,
  query: fc.option(queryString(), { nil: undefined }),
  auth,
  body: rawBody,
  contentType: fc.option(fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/octet-stream'), { nil: undefined, freq: 4 }),
  scenario: fc.option(headerText(40), { nil: undefined, freq: 3 }),
});

describe('fuzz: any method, path, query, raw body and Authorization under /api', () => {
  it('never a 5xx, always the envelope, no data changed; without a valid key only 401 or 404', async () => {
    await fc.assert(
      fc.asyncProperty(transportRequest, async (r) => {
        const headers: Record<string, string> = {};
        if (r.auth.kind === 'live' || r.auth.kind === 'sandbox') headers.Authorization = `Bearer ${w.keys[r.auth.kind]}`;
        if (r.auth.kind === 'garbage') headers.Authorization = r.auth.header;
        if (r.contentType !== undefined) headers['Content-Type'] = r.contentType;
        if (r.scenario !== undefined) headers['X-Test-Scenario'] = r.scenario;
        let body = r.body;
        // A live POST always carries a body that cannot parse (a leading 0xFF byte), so no
        // combination of path and body can be a valid request that changes data.
        if (r.auth.kind === 'live' && r.method !== 'GET' && r.method !== 'HEAD') {
          body = Buffer.concat([Buffer.from([0xff]), body ?? Buffer.alloc(0)]);
          headers['Content-Type'] = 'application/json';
        }
        if (r.method === 'GET' || r.method === 'HEAD') body = undefined;
        const req: RawRequest = { method: r.method, path: r.path + (r.query !== undefined ? `?${r.query}` : ''), headers, ...(body ? { body } : {}) };
        const sent: Sent = { kind: r.auth.kind === 'garbage' ? 'none' : r.auth.kind, scenario: r.scenario };
        const what = describeRequest(req);
        const before = await w.snapshot();
        const res = await w.send(req);
        if (r.method === 'HEAD') {
          assert.ok(res.status < 500, `HEAD 5xx: ${what} → ${res.status}`);
        } else {
          assertApiAnswer(res, sent, what);
        }
        if (r.auth.kind === 'none' || r.auth.kind === 'garbage') {
          assert.ok(res.status === 401 || res.status === 404, `past the gate without a valid key: ${what} → ${res.status} ${res.text.slice(0, 200)}`);
        }
        // A sandbox POST that happens to be valid simulates its change: its test-mode events only.
        await assertOnlySimulated(w, before, { req, res, sent }, what);
      }),
      fcParams(Number(process.env.FUZZ_TRANSPORT_RUNS ?? 300)),
    );
  });

  it('request headers: any X-Test-Scenario, X-Request-Id and extra header values on every operation', async () => {
    const arb = fc.record({
      op: fc.constantFrom(...OPERATIONS.filter((o) => !o.mutating || o.method === 'GET')),
      kind: fc.constantFrom('live' as const, 'sandbox' as const),
      scenario: headerText(2000),
      requestId: headerText(2000),
      name: fc.constantFrom('X-Forwarded-For', 'X-HTTP-Method-Override', 'X-Original-URL', 'Accept', 'Accept-Charset', 'If-None-Match', 'Cookie', 'Forwarded', 'X-Test-Scenario'),
      value: headerText(2000),
      param: fc.constantFrom('000123', 'REQ-1'),
    });
    await fc.assert(
      fc.asyncProperty(arb, async ({ op, kind, scenario, requestId, name, value, param }) => {
        const path = op.template.replace(/\{service_number\}/, w.serviceNumbers[0]!.toString()).replace(/\{request_id\}/, w.requestIds[0] ?? param);
        const req: RawRequest = {
          method: op.method,
          path,
          headers: { Authorization: `Bearer ${w.keys[kind]}`, 'X-Test-Scenario': scenario, 'X-Request-Id': requestId, [name]: value },
        };
        const what = describeRequest(req);
        const before = await w.snapshot();
        const res = await w.send(req);
        assertApiAnswer(res, { kind, scenario: name === 'X-Test-Scenario' ? value : scenario }, what);
        // The id is echoed only when it is plain and short; anything else is replaced, never refused.
        const echoed = String(res.headers['x-request-id']);
        const plain = /^[A-Za-z0-9._:-]{1,128}$/.test(requestId.trim());
        // An id that could hold an API key is replaced too (holdsKey, test/http/request-id.test.ts): never echo a key.
        if (plain && !holdsKey(requestId.trim())) assert.equal(echoed, requestId.trim(), what);
        else assert.match(echoed, /^req_[0-9a-f]{32}$/, what);
        assertUnchanged(before, await w.snapshot(), what);
      }),
      fcParams(Number(process.env.FUZZ_HEADER_RUNS ?? 60)),
    );
  });

  /** Issue 21 rows 1 and 8: bodies past a bound of src/http/json-body.ts, or not a JSON object. */
  const boundBreaker: fc.Arbitrary<{ body: Buffer; message: RegExp }> = fc.oneof(
    fc.tuple(fc.integer({ min: 65, max: 5000 }), fc.integer({ min: 1, max: 8 })).map(([n, per]) => ({
      // n keys spread over objects of `per` keys in an array (each object under 64 keys alone)
      body: Buffer.from(JSON.stringify({ a: Array.from({ length: Math.ceil(n / per) }, (_, i) => Object.fromEntries(Array.from({ length: per }, (_, j) => [`k${i}_${j}`, 0]))) })),
      message: /more than 64 object keys|more than 1000 array items|larger than 64 KiB/,
    })),
    fc.tuple(fc.integer({ min: 1001, max: 20_000 }), fc.integer({ min: 1, max: 50 })).map(([n, per]) => ({
      body: Buffer.from(JSON.stringify({ recipients: Array.from({ length: Math.ceil(n / per) }, () => Array.from({ length: per }, () => 0)) })),
      message: /more than 1000 array items|larger than 64 KiB/,
    })),
    fc.tuple(fc.integer({ min: 17, max: 20_000 }), fc.boolean()).map(([depth, arrays]) => ({
      body: Buffer.from(arrays ? `{"a":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`),
      message: /nested more than 16 levels|larger than 64 KiB/,
    })),
    fc.integer({ min: 64 * 1024 + 1, max: 1536 * 1024 }).map((n) => ({ body: Buffer.from(`{"reason":"${'A'.repeat(n)}"}`), message: /larger than 64 KiB/ })),
    fc.oneof(fc.json(), fc.constantFrom('[]', '[{}]', '"{}"', '1', 'null', ' [ {"a":1} ] ')).filter((t) => !t.trimStart().startsWith('{') && t.trim() !== '').map((t) => ({
      body: Buffer.from(t),
      message: /must be a JSON object/,
    })),
  );

  it('a body past a bound (size, keys, items, depth) or not a JSON object: 400 invalid_request on every POST, nothing changed', async () => {
    const arb = fc.record({
      op: fc.constantFrom(...OPERATIONS.filter((o) => o.method === 'POST')),
      kind: fc.constantFrom('live' as const, 'sandbox' as const),
      breaker: boundBreaker,
    });
    await fc.assert(
      fc.asyncProperty(arb, async ({ op, kind, breaker }) => {
        const path = op.template.replace(/\{service_number\}/, w.serviceNumbers[0]!.toString()).replace(/\{request_id\}/, w.requestIds[0] ?? 'REQ-1');
        const headers: Record<string, string> = { Authorization: `Bearer ${w.keys[kind]}`, 'Content-Type': 'application/json' };
        const req: RawRequest = { method: 'POST', path, headers, body: breaker.body };
        const what = describeRequest(req);
        const before = await w.snapshot();
        const res = await w.send(req);
        assertApiAnswer(res, { kind }, what);
        assert.equal(res.status, 400, `${what} → ${res.status} ${res.text.slice(0, 200)}`);
        const error = (res.json as { error: { code: string; message: string } }).error;
        assert.equal(error.code, 'invalid_request', what);
        assert.match(error.message, breaker.message, what);
        assertUnchanged(before, await w.snapshot(), what);
      }),
      fcParams(Number(process.env.FUZZ_TRANSPORT_RUNS ?? 300) / 3),
    );
  });
});
