/**
 * The per-operation fuzz property (used by operations-*.test.ts, split in two files so each runs
 * well inside the test runner's per-file timeout and the two run side by side). For every request:
 *
 * - never a 5xx (but the sandbox `server_error` scenario), always the JSON envelope with a code of
 *   openapi.yaml's list, never a stack trace (assertApiAnswer);
 * - business tables byte-for-byte unchanged (api_keys.last_used_at aside), live events and their
 *   deliveries too; a sandbox change adds exactly its simulated test-mode events (assertOnlySimulated);
 * - a request with a breaker is a 4xx; a clean sandbox request is a 2xx.
 *
 * Live admin:full keys only ever send input that must be refused on operations that change data;
 * sandbox admin:full keys send anything, but on operations whose records exist in both modes (webhook
 * endpoints, events) they too send only input that must be refused. Replay a failure with
 * FUZZ_SEED=<seed printed>.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { OPERATIONS } from './arbitraries.ts';
import { assertApiAnswer, assertOnlySimulated, describeRequest, fcParams, startFuzzWorld, type FuzzWorld, type KeyKind } from './harness.ts';
import { requestFor } from './requests.ts';

/** The operations of operations-services.test.ts (the others are in operations-other.test.ts and operations-webhooks.test.ts). */
export const SERVICE_OPERATIONS = ['createService', 'listServices', 'getService', 'updateServicePassword', 'upgradeService', 'downgradeService', 'cancelService'];

/** The operations of operations-webhooks.test.ts. */
export const WEBHOOK_OPERATIONS = [
  'createWebhookEndpoint',
  'listWebhookEndpoints',
  'getWebhookEndpoint',
  'updateWebhookEndpoint',
  'deleteWebhookEndpoint',
  'rotateWebhookEndpointSecret',
  'pingWebhookEndpoint',
  'sendExampleEvent',
  'getWebhookEndpointStats',
  'recoverWebhookEndpoint',
  'listWebhookEndpointDeliveries',
  'listEvents',
  'getEvent',
  'redeliverEvent',
];

const RUNS_PER_OPERATION = Number(process.env.FUZZ_OP_RUNS ?? 60);

export function fuzzOperations(title: string, operationIds: string[]): void {
  let w: FuzzWorld;
  before(async () => {
    w = await startFuzzWorld();
  });
  after(async () => {
    await w?.close();
  });

  describe(title, () => {
    for (const op of OPERATIONS.filter((o) => operationIds.includes(o.operationId))) {
      it(`${op.method} ${op.template} (${op.operationId})`, async () => {
        const arb = fc.constantFrom<KeyKind>('live', 'sandbox').chain((kind) => requestFor(op, kind, w));
        await fc.assert(
          fc.asyncProperty(arb, async (built) => {
            const what = `${built.label}: ${describeRequest(built.req)}`;
            const before = await w.snapshot();
            const res = await w.send(built.req);
            assertApiAnswer(res, built.sent, what);
            if (built.mustReject) {
              assert.ok(res.status >= 400 && res.status < 500, `a broken request was not refused: ${what} → ${res.status} ${res.text.slice(0, 300)}`);
            }
            if (built.mustSucceed) {
              assert.ok(res.status === 200 || res.status === 202, `a valid sandbox request was refused: ${what} → ${res.status} ${res.text.slice(0, 300)}`);
            }
            await assertOnlySimulated(w, before, { req: built.req, res, sent: built.sent }, what);
          }),
          fcParams(RUNS_PER_OPERATION),
        );
      });
    }
  });
}
