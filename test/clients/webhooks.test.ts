// The TypeScript client's verifyWebhook (clients/typescript/src/webhooks.ts) on deliveries signed
// as the server signs them (src/webhooks/sign.ts): one row per delivery, verified or refused with
// its reason. test/clients/typescript-package.test.ts runs it again from the installed package,
// where standardwebhooks is the bundled copy in dist/vendor/.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { verifyWebhook, WebhookVerificationError, type WebhookEvent, type WebhookHeaders, type WebhookRefusal } from '../../clients/typescript/src/index.ts';
import { newEndpointSecret } from '../../src/webhooks/secrets.ts';
import { signatureHeaders } from '../../src/webhooks/sign.ts';

const NEW = newEndpointSecret();
const OLD = newEndpointSecret();
const OTHER = newEndpointSecret();
const EVENT = {
  object: 'event',
  id: 'evt_0123456789abcdefghijklmn',
  type: 'service.created',
  created_at: '2026-01-02T03:04:05.678Z',
  mode: 'test',
  data: { object: { object: 'service', service_number: 123456789, status: 'active', mode: 'test', simulated: true } },
};
const BODY = JSON.stringify(EVENT);

interface Delivery {
  body: string | Uint8Array;
  headers: WebhookHeaders;
}

/** A delivery as the server sends it: the event's JSON signed with `secrets` at `at`. */
function delivery(secrets: string[], at = new Date()): { body: string; headers: Record<string, string> } {
  return { body: BODY, headers: { ...signatureHeaders({ eventId: EVENT.id, body: BODY, secrets, at }), 'content-type': 'application/json' } };
}

const minutes = (n: number) => new Date(Date.now() + n * 60_000);
const capitalised = (headers: Record<string, string>) => Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.replace(/(^|-)\w/g, (c) => c.toUpperCase()), v]));
const without = (headers: Record<string, string>, name: string) => Object.fromEntries(Object.entries(headers).filter(([k]) => k !== name));

const rows: Array<[what: string, secret: string, make: () => Delivery, outcome: 'verified' | WebhookRefusal]> = [
  ['signed with the secret', NEW, () => delivery([NEW]), 'verified'],
  ['the body as bytes', NEW, () => ({ ...delivery([NEW]), body: new TextEncoder().encode(BODY) }), 'verified'],
  ['fetch Headers', NEW, () => ({ ...delivery([NEW]), headers: new Headers(delivery([NEW]).headers) }), 'verified'],
  ['header names in any case', NEW, () => ({ ...delivery([NEW]), headers: capitalised(delivery([NEW]).headers) }), 'verified'],
  ['rotation: two signatures, the new secret', NEW, () => delivery([NEW, OLD]), 'verified'],
  ['rotation: two signatures, the old secret', OLD, () => delivery([NEW, OLD]), 'verified'],
  ['signed 4 minutes ago (within the tolerance)', NEW, () => delivery([NEW], minutes(-4)), 'verified'],
  ['another secret', OTHER, () => delivery([NEW, OLD]), 'signature'],
  ['a tampered body', NEW, () => ({ ...delivery([NEW]), body: BODY.replace('123456789', '123456780') }), 'signature'],
  ['the body parsed and serialised again (spacing changed)', NEW, () => ({ ...delivery([NEW]), body: JSON.stringify(EVENT, null, 1) }), 'signature'],
  ['another webhook-id', NEW, () => ({ ...delivery([NEW]), headers: { ...delivery([NEW]).headers, 'webhook-id': 'evt_other' } }), 'signature'],
  ['signed 10 minutes ago (a replay)', NEW, () => delivery([NEW], minutes(-10)), 'timestamp'],
  ['signed 10 minutes ahead', NEW, () => delivery([NEW], minutes(10)), 'timestamp'],
  ['a timestamp that is not a number', NEW, () => ({ ...delivery([NEW]), headers: { ...delivery([NEW]).headers, 'webhook-timestamp': 'yesterday' } }), 'timestamp'],
  ...(['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const).map(
    (name): [string, string, () => Delivery, WebhookRefusal] => [`no ${name}`, NEW, () => ({ ...delivery([NEW]), headers: without(delivery([NEW]).headers, name) }), 'missing_headers'],
  ),
  ['a header sent twice', NEW, () => ({ ...delivery([NEW]), headers: { ...delivery([NEW]).headers, 'webhook-signature': ['v1,a', 'v1,b'] } }), 'missing_headers'],
];

describe('verifyWebhook', () => {
  for (const [what, secret, make, outcome] of rows) {
    test(`${what}: ${outcome === 'verified' ? 'verified, the event returned' : `refused (${outcome})`}`, () => {
      const { body, headers } = make();
      if (outcome === 'verified') {
        assert.deepEqual(verifyWebhook(secret, body, headers), EVENT);
        return;
      }
      assert.throws(
        () => verifyWebhook(secret, body, headers),
        (err: unknown) => err instanceof WebhookVerificationError && err.name === 'WebhookVerificationError' && err.reason === outcome && err.message.length > 20,
      );
    });
  }

  test('a signed body that is not an event is refused (body)', () => {
    const body = 'not json';
    const headers = signatureHeaders({ eventId: 'evt_1', body, secrets: [NEW] });
    assert.throws(() => verifyWebhook(NEW, body, { ...headers }), (err: unknown) => err instanceof WebhookVerificationError && err.reason === 'body');
  });

  test('a parsed body is a mistake, said plainly (TypeError), not a refusal', () => {
    const { headers } = delivery([NEW]);
    assert.throws(() => verifyWebhook(NEW, EVENT as unknown as string, headers), (err: unknown) => err instanceof TypeError && /raw request body/.test(err.message));
  });

  test('the event is typed by its type', () => {
    const { body, headers } = delivery([NEW]);
    const event: WebhookEvent = verifyWebhook(NEW, body, headers);
    assert.equal(event.type, 'service.created');
    if (event.type === 'service.created') {
      const serviceNumber: number = event.data.object.service_number;
      assert.equal(serviceNumber, 123456789);
    }
  });
});
