/**
 * Which client request ids are kept (src/http/request-id.ts, openapi.yaml "Request ids"): an id
 * that holds a key in any spelling the probe of issue 40 (item 2) sent is replaced by one of
 * ours; ordinary ids (UUIDs, W3C trace ids, our own `req_` ids, hex digests, short tokens) are kept.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { generateApiKey } from '../../src/auth/keys.ts';
import { requestIdOf } from '../../src/http/request-id.ts';
import { keyForms } from '../helpers/key-spellings.ts';

const OURS = /^req_[0-9a-f]{32}$/;

describe('a key-derived X-Request-Id is replaced (issue 40 item 2)', () => {
  for (const mode of ['live', 'test'] as const) {
    for (const [form] of keyForms(generateApiKey(mode).key)) {
      test(`${mode} key, ${form}: replaced by a req_ id, for 50 random keys`, () => {
        for (let i = 0; i < 50; i++) {
          const sent = new Map(keyForms(generateApiKey(mode).key)).get(form)!;
          assert.ok(sent.length <= 128 && /^[A-Za-z0-9._:-]+$/.test(sent), `the form is a sane id otherwise: ${sent}`);
          const kept = requestIdOf(sent);
          assert.match(kept, OURS, `${sent} was kept`);
        }
      });
    }
  }
});

describe('ordinary request ids are kept', () => {
  const ordinary: Array<[string, () => string]> = [
    ['a UUID', () => randomUUID()],
    ['a UUID in upper case', () => randomUUID().toUpperCase()],
    ['a UUID without dashes (32 hex digits)', () => randomUUID().replace(/-/g, '')],
    ['our own req_ id', () => `req_${randomBytes(16).toString('hex')}`],
    ['a W3C traceparent', () => `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`],
    ['a SHA-1 in hex', () => randomBytes(20).toString('hex')],
    ['a SHA-256 in hex', () => randomBytes(32).toString('hex')],
    ['16 random bytes in base64url', () => randomBytes(16).toString('base64url')],
    ['a ULID', () => `01${randomBytes(12).toString('hex').toUpperCase()}`.slice(0, 26)],
    ['a short token', () => `job-${randomBytes(4).toString('hex')}`],
    ['words that hold sk…test', () => 'disk-test-7'],
    ['a key\'s public prefix only', () => 'sk_live_pPmD'],
    ['31 letters and digits', () => 'a'.repeat(20) + 'Z'.repeat(11)],
    ['a long kebab-case id in one case', () => `order-sync-2025-03-02-customer-portal-retry-${randomBytes(3).toString('hex')}`],
    ['the example of openapi.yaml', () => 'order-sync-2025-03-02-0001'],
  ];
  for (const [what, make] of ordinary) {
    test(`${what}: kept`, () => {
      for (let i = 0; i < 200; i++) {
        const id = make();
        assert.equal(requestIdOf(id), id);
      }
    });
  }

  test('32 letters and digits, not all hex: replaced (a secret without its prefix)', () => {
    assert.match(requestIdOf('a'.repeat(20) + 'Z'.repeat(12)), OURS);
    assert.equal(requestIdOf('a'.repeat(20) + 'F'.repeat(12)), 'a'.repeat(20) + 'F'.repeat(12));
  });

  test('32 letters and digits split by separators, in both cases: replaced (a secret split up); in one case: kept', () => {
    assert.match(requestIdOf('orderSync-2025-03-02-customerPortal-7'), OURS);
    assert.equal(requestIdOf('AbCdEf01-2345-6789-aBcD-eF0123456789'), 'AbCdEf01-2345-6789-aBcD-eF0123456789', 'hex digits in both cases');
    assert.equal(requestIdOf('ordersync-2025-03-02-customerportal-7'), 'ordersync-2025-03-02-customerportal-7');
    assert.equal(requestIdOf('OrderSync-2025-03-02-Portal'), 'OrderSync-2025-03-02-Portal', '26 letters and digits');
  });
});
