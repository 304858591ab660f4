import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { newEndpointSecret } from '../../src/webhooks/secrets.ts';
import { signatureHeaders, type SignatureHeaders } from '../../src/webhooks/sign.ts';

const NEW = newEndpointSecret();
const OLD = newEndpointSecret();
const OTHER = newEndpointSecret();
const BODY = '{"type":"service.created","data":{"service_number":123456789}}';

/** What a receiver does: the package's own verify (which also checks the timestamp is within 5 minutes). */
function verifies(secret: string, body: string, headers: SignatureHeaders): boolean {
  try {
    new Webhook(secret).verify(body, { ...headers });
    return true;
  } catch {
    return false;
  }
}

describe('signature headers (src/webhooks/sign.ts), verified with standardwebhooks', () => {
  const rows: Array<[name: string, signedWith: string[], verifiedWith: string, body: string, change: Partial<SignatureHeaders>, verifies: boolean]> = [
    ['one secret', [NEW], NEW, BODY, {}, true],
    ['rotation: the new secret verifies', [NEW, OLD], NEW, BODY, {}, true],
    ['rotation: the old secret verifies', [NEW, OLD], OLD, BODY, {}, true],
    ['another secret does not verify', [NEW, OLD], OTHER, BODY, {}, false],
    ['a tampered body does not verify', [NEW], NEW, BODY.replace('123456789', '123456780'), {}, false],
    ['a body with a space more does not verify', [NEW], NEW, `${BODY} `, {}, false],
    ['another webhook-id does not verify', [NEW], NEW, BODY, { 'webhook-id': 'evt_other' }, false],
    ['another webhook-timestamp does not verify', [NEW], NEW, BODY, { 'webhook-timestamp': String(Math.floor(Date.now() / 1000) - 1) }, false],
  ];
  for (const [name, signedWith, verifiedWith, body, change, expected] of rows) {
    test(`${name}: ${expected ? 'verifies' : 'refused'}`, () => {
      const headers = signatureHeaders({ eventId: 'evt_1', body: BODY, secrets: signedWith, at: new Date() });
      assert.equal(verifies(verifiedWith, body, { ...headers, ...change }), expected);
    });
  }

  test('the headers: the event id, whole seconds, one v1 signature per secret', () => {
    const at = new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678));
    const headers = signatureHeaders({ eventId: 'evt_1', body: BODY, secrets: [NEW, OLD], at });
    assert.deepEqual(Object.keys(headers).sort(), ['webhook-id', 'webhook-signature', 'webhook-timestamp']);
    assert.equal(headers['webhook-id'], 'evt_1');
    assert.equal(headers['webhook-timestamp'], String(Date.UTC(2026, 0, 2, 3, 4, 5) / 1000));
    const signatures = headers['webhook-signature'].split(' ');
    assert.equal(signatures.length, 2);
    for (const signature of signatures) assert.match(signature, /^v1,[A-Za-z0-9+/]{43}=$/);
    assert.equal(signatures[0], new Webhook(NEW).sign('evt_1', at, BODY));
    assert.equal(signatures[1], new Webhook(OLD).sign('evt_1', at, BODY));
  });

  test('an attempt signed 10 minutes ago is refused by receivers (sign at each attempt)', () => {
    const headers = signatureHeaders({ eventId: 'evt_1', body: BODY, secrets: [NEW], at: new Date(Date.now() - 10 * 60_000) });
    assert.equal(verifies(NEW, BODY, headers), false);
  });

  const refused: Array<[name: string, eventId: string, secrets: string[], message: RegExp]> = [
    ['no secret', 'evt_1', [], /at least one secret/],
    ['a secret without whsec_', 'evt_1', [NEW.slice('whsec_'.length)], /must start with whsec_/],
    ['no event id', '', [NEW], /event id/],
  ];
  for (const [name, eventId, secrets, message] of refused) {
    test(`${name}: throws`, () => {
      assert.throws(() => signatureHeaders({ eventId, body: BODY, secrets }), message);
    });
  }
});
