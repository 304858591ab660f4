/**
 * Properties from the security probe's findings, over every POST operation with a live key:
 *
 * - a body that would be accepted as JSON, sent without a JSON Content-Type (none, or any other
 *   type), is `400 invalid_request` and changes nothing;
 * - a body under any Content-Encoding (gzip, deflate, br or an unknown coding) that does not
 *   decompress to JSON is `400 invalid_request`, never a 5xx, and changes nothing.
 *
 * - free text with a bidirectional control or U+2028/U+2029 is `400 invalid_parameter`, and a
 *   reason made only of invisible characters `400 missing_parameter` (issue 21 rows 4 and 9).
 *
 * (Control characters and invisible-only reasons are also in the per-operation properties,
 * test/fuzz/operations-*.test.ts, as invalid values of each free-text field.)
 * Replay a failure with FUZZ_SEED=<seed printed by fast-check>.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { invisibleOnly, OPERATIONS } from './arbitraries.ts';
import { assertApiAnswer, assertUnchanged, describeRequest, fcParams, startFuzzWorld, type FuzzWorld, type RawRequest } from './harness.ts';

let w: FuzzWorld;
before(async () => {
  w = await startFuzzWorld();
});
after(async () => {
  await w?.close();
});

const RUNS = Number(process.env.FUZZ_HARDENING_RUNS ?? 150);
const POSTS = OPERATIONS.filter((o) => o.method === 'POST');

/** A body each operation would accept from a live key (so only the transport can refuse it). */
const ACCEPTED: Record<string, object> = {
  postAuthCheck: {},
  createService: { plan: 'Basic VPS', hostname: 'fuzz.example.com', customer_email: 'fuzz@example.com' },
  updateServicePassword: { password: 'MyChosenPassword-1' },
  upgradeService: { plan: 'Enterprise VPS' },
  downgradeService: { plan: 'Basic VPS' },
  cancelService: { reason: 'Customer moved' },
  manageRequest: { action: 'deny', denial_reason: 'Hostname taken' },
  sendServicesReport: { recipients: ['fuzz@broker.example'] },
  sendInvoicesReport: { recipients: ['fuzz@broker.example'], start_date: '2020-01-01', end_date: '2030-12-31' },
};

function pathOf(template: string): string {
  return template.replace('{service_number}', String(w.serviceNumbers[0])).replace('{request_id}', w.requestIds[0] ?? 'REQ-000001');
}

const contentType = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'text/json', 'application/octet-stream', 'application/jsonx', 'json'),
  fc.stringMatching(/^[a-z]{1,10}\/[a-z0-9.+-]{1,20}$/).filter((t) => !/json/.test(t)),
);

async function refused(req: RawRequest): Promise<void> {
  const what = describeRequest(req);
  const before = await w.snapshot();
  const res = await w.send(req);
  assertApiAnswer(res, { kind: 'live', scenario: undefined }, what);
  assert.equal(res.status, 400, `${what} → ${res.status} ${res.text.slice(0, 200)}`);
  assert.equal((res.json as { error: { code: string } }).error.code, 'invalid_request', what);
  assertUnchanged(before, await w.snapshot(), what);
}

describe('fuzz: bodies the JSON parser cannot read, live key, every POST', () => {
  it('an accepted body without a JSON Content-Type is 400 invalid_request, nothing changed', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...POSTS), contentType, async (op, type) => {
        const headers: Record<string, string> = { Authorization: `Bearer ${w.keys.live}` };
        if (type !== undefined) headers['Content-Type'] = type;
        await refused({ method: 'POST', path: pathOf(op.template), headers, body: Buffer.from(JSON.stringify(ACCEPTED[op.operationId] ?? {})) });
      }),
      fcParams(RUNS),
    );
  });

  it('a body under any Content-Encoding that does not decompress to JSON is 400 invalid_request, nothing changed', async () => {
    const encoding = fc.oneof(fc.constantFrom('gzip', 'deflate', 'br', 'x-gzip', 'compress', 'identity, gzip', 'zstd'), fc.stringMatching(/^[a-z-]{1,12}$/).filter((e) => e !== 'identity'));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...POSTS), encoding, fc.uint8Array({ minLength: 1, maxLength: 300 }), async (op, coding, bytes) => {
        await refused({
          method: 'POST',
          path: pathOf(op.template),
          headers: { Authorization: `Bearer ${w.keys.live}`, 'Content-Type': 'application/json', 'Content-Encoding': coding },
          body: Buffer.from(bytes),
        });
      }),
      fcParams(RUNS),
    );
  });
});

/** The free-text fields of the live POSTs, with the body around them (issue 21 rows 4 and 9). */
const FREE_TEXT: Array<{ operationId: string; field: string; body: (text: string) => object; blankIsMissing: boolean }> = [
  { operationId: 'cancelService', field: 'reason', body: (reason) => ({ reason }), blankIsMissing: true },
  { operationId: 'manageRequest', field: 'denial_reason', body: (denial_reason) => ({ action: 'deny', denial_reason }), blankIsMissing: true },
  { operationId: 'createService', field: 'customer_name', body: (customer_name) => ({ ...ACCEPTED.createService, customer_name }), blankIsMissing: false },
  { operationId: 'updateServicePassword', field: 'password', body: (password) => ({ password: `Aa1-long-enough-${password}` }), blankIsMissing: false },
];

async function answer(operationId: string, body: object): Promise<{ code: string; details: { field?: string; rule?: string; missing?: string[] } }> {
  const op = POSTS.find((o) => o.operationId === operationId)!;
  const req: RawRequest = {
    method: 'POST',
    path: pathOf(op.template),
    headers: { Authorization: `Bearer ${w.keys.live}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  };
  const what = describeRequest(req);
  const before = await w.snapshot();
  const res = await w.send(req);
  assertApiAnswer(res, { kind: 'live', scenario: undefined }, what);
  assert.equal(res.status, 400, `${what} → ${res.status} ${res.text.slice(0, 200)}`);
  assertUnchanged(before, await w.snapshot(), what);
  const error = (res.json as { error: { code: string; details: { field?: string; rule?: string; missing?: string[] } } }).error;
  return { code: error.code, details: error.details };
}

describe('fuzz: free text, live key', () => {
  it('a bidirectional control or U+2028/U+2029 anywhere in free text is 400 invalid_parameter (rule characters), nothing changed', async () => {
    const arb = fc.record({
      target: fc.constantFrom(...FREE_TEXT),
      before: fc.string({ maxLength: 20 }),
      refused: fc.constantFrom('\u061c', '\u200e', '\u200f', '\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069', '\u2028', '\u2029'),
      after: fc.string({ maxLength: 20 }),
    });
    await fc.assert(
      fc.asyncProperty(arb, async ({ target, before: a, refused: c, after: b }) => {
        const { code, details } = await answer(target.operationId, target.body(`x${a}${c}${b}x`));
        assert.equal(code, 'invalid_parameter');
        assert.equal(details.field, target.field);
      }),
      fcParams(RUNS),
    );
  });

  it('a reason made only of invisible characters is 400 missing_parameter, nothing changed', async () => {
    const arb = fc.record({ target: fc.constantFrom(...FREE_TEXT.filter((t) => t.blankIsMissing)), text: invisibleOnly });
    await fc.assert(
      fc.asyncProperty(arb, async ({ target, text }) => {
        const { code, details } = await answer(target.operationId, target.body(text as string));
        // A bidirectional mark among the invisible characters is refused as a character first.
        if (code === 'invalid_parameter') assert.equal(details.rule, 'characters');
        else assert.deepEqual([code, details.missing], ['missing_parameter', [target.field]]);
      }),
      fcParams(RUNS),
    );
  });
});
