/** No key material in a log line, however it was written into a URL (src/ops/redact.ts). One row per form. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { scrubSecrets, scrubUrl } from '../../src/ops/redact.ts';

const SECRET = 'AbCdEf0123456789GhIjKlMnOpQrStUv';
const KEY = `sk_live_${SECRET}`;
const everyCharEncoded = (text: string) => [...text].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');

describe('scrubSecrets', () => {
  const rows: Array<[string, string]> = [
    ['as it is', `/api/v1/auth-check?api_key=${KEY}`],
    ['underscores percent-encoded', `/api/v1/auth-check?api_key=${KEY.replace(/_/g, '%5F')}`],
    ['lower-case escapes', `/api/v1/auth-check?api_key=${KEY.replace(/_/g, '%5f')}`],
    ['glued to a leading underscore', `/api/v1/auth-check?api_key=_${KEY}`],
    ['glued to letters', `/api/v1/auth-check?api_key=x${KEY}`],
    ['upper-case prefix', `/api/v1/auth-check?api_key=SK_LIVE_${SECRET}`],
    ['every character encoded', `/api/v1/auth-check?api_key=${everyCharEncoded(KEY)}`],
    ['encoded twice', `/api/v1/auth-check?api_key=${encodeURIComponent(everyCharEncoded(KEY))}`],
    ['beside a stray %', `/api/v1/auth-check?a=100%&api_key=${KEY.replace(/_/g, '%5F')}`],
    ['in the path', `/api/v1/${everyCharEncoded(KEY)}`],
    ['a sandbox key', `/x?k=${KEY.replace('live', 'test').replace(/_/g, '%5F')}`],
    ['two keys, one plain and one encoded', `/x?a=${KEY}&b=${everyCharEncoded(KEY)}`],
  ];
  for (const [form, url] of rows) {
    test(`${form}: the secret is gone, the mode stays`, () => {
      const logged = scrubSecrets(url);
      assert.equal(logged.includes(SECRET), false, logged);
      assert.equal(logged.includes(everyCharEncoded(SECRET)), false, logged);
      assert.match(logged, /sk_(live|test)_\[redacted\]/i);
    });
  }

  test('a URL without key material is logged as it was sent', () => {
    for (const url of ['/api/v1/services?limit=25', '/api/v1/services?search=a%2Bb&modified_since=2025-03-01T10%3A30%3A00%2B01%3A00', '/x?q=100%']) {
      assert.equal(scrubSecrets(url), url);
    }
  });
});

describe('scrubUrl (issue 21 row 10)', () => {
  const known = new Set(['limit', 'search']);
  test("an unknown parameter's value is left out, whatever it holds; known ones stay", () => {
    assert.equal(scrubUrl('/api/v1/services?limit=25&token=abc&search=web', known), '/api/v1/services?limit=25&token=[redacted]&search=web');
    assert.equal(scrubUrl('/healthz?x=1&y'), '/healthz?x=[redacted]&y');
    assert.equal(scrubUrl('/api/v1/services?li%6Dit=25', known), '/api/v1/services?li%6Dit=25');
  });

  test('a known value that decodes from base64, base64url or percent-encoding to a key is left out', () => {
    for (const value of [Buffer.from(KEY).toString('base64'), encodeURIComponent(Buffer.from(KEY).toString('base64')), Buffer.from(`?${KEY}`).toString('base64url'), everyCharEncoded(KEY)]) {
      const logged = scrubUrl(`/api/v1/services?limit=25&search=${value}`, known);
      assert.equal(logged.includes(SECRET), false, logged);
      assert.equal(logged.includes(value), false, logged);
    }
  });
});
