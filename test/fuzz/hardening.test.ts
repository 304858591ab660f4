/**
 * Properties from the security probe's findings, over every POST operation with a live key:
 *
 * - a body that would be accepted as JSON, sent without a JSON Content-Type (none, or any other
 *   type), is `400 invalid_request` and changes nothing;
 * - a body under any Content-Encoding (gzip, deflate, br or an unknown coding) that does not
 *   decompress to JSON is `400 invalid_request`, never a 5xx, and changes nothing.
 *
 * (Control characters and invisible-only reasons are in the per-operation properties,
 * test/fuzz/operations-*.test.ts, as invalid values of each free-text field.)
 * Replay a failure with FUZZ_SEED=<seed printed by fast-check>.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { OPERATIONS } from './arbitraries.ts';
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
