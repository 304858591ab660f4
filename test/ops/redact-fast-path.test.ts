/**
 * The first tests of scrubSecrets and scrubUrl (src/ops/redact.ts) never let through a text the
 * full redaction would change: on generated URLs, each equals its `…Fully` twin, which has no
 * first test. The URLs are built from pieces of key spellings, escapes, download paths and query
 * parameters, so that many take the fast path and many need the full one.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { scrubSecrets, scrubSecretsFully, scrubUrl, scrubUrlFully } from '../../src/ops/redact.ts';

const SECRET = 'AbCdEf0123456789GhIjKlMnOpQrStUv';
const PIECES = [
  '/', '/', '/api/v1/services', '/downloads/reports/', '\\', '?', '&', '&', '=', '=', 'limit', 'status', 'cursor', 'q', '25', 'active',
  'a', 'b', 's', 'k', 'S', 'K', 'sk', 'live', 'test', '_', '-', '.', ' ', '%', '%2F', '%5F', '%73', '%6B', '%25', '+', '#',
  SECRET.slice(0, 16), SECRET.slice(16), SECRET, '0123456789abcdef', 'c2tfbGl2ZV8', 'c2tfbGl2ZV9BYkNk', 'x'.repeat(10), '\u00e9',
];
const urls = fc.array(fc.constantFrom(...PIECES), { maxLength: 24 }).map((parts) => parts.join(''));
const knownSets = fc.subarray(['limit', 'status', 'cursor', 'q', 'a', 'sk']).map((names) => new Set(names));

test('scrubSecrets equals scrubSecretsFully on every generated text', () => {
  fc.assert(
    fc.property(urls, (text) => {
      assert.equal(scrubSecrets(text), scrubSecretsFully(text));
    }),
    { numRuns: 20_000 },
  );
});

test('scrubUrl equals scrubUrlFully on every generated URL, and many pass unchanged', () => {
  let unchanged = 0;
  let runs = 0;
  fc.assert(
    fc.property(urls, knownSets, (url, known) => {
      const scrubbed = scrubUrl(url, known);
      assert.equal(scrubbed, scrubUrlFully(url, known));
      runs++;
      if (scrubbed === url) unchanged++;
    }),
    { numRuns: 20_000 },
  );
  // Not a vacuous property: a good part of the URLs is one the first test may pass.
  assert.ok(unchanged > runs / 10, `${unchanged} of ${runs} unchanged`);
  assert.ok(unchanged < runs - runs / 10, `${unchanged} of ${runs} unchanged`);
});

test('a plain URL of an operation comes back as it is, a key-shaped or unknown one does not', () => {
  const known = new Set(['limit', 'status']);
  assert.equal(scrubUrl('/api/v1/services?limit=25&status=active', known), '/api/v1/services?limit=25&status=active');
  assert.equal(scrubUrl('/api/v1/services?limit=25&other=1', known), '/api/v1/services?limit=25&other=[redacted]');
  assert.equal(scrubUrl(`/api/v1/services/sk_live_${SECRET}`, known), '/api/v1/services/sk_live_[redacted]');
  assert.equal(scrubUrl('/downloads/reports/abc', known), '/downloads/reports/[redacted]');
  assert.equal(scrubUrl('/api/v1/services?status=c2tfbGl2ZV9BYkNkRWYwMTIz', known), '/api/v1/services?status=[redacted]');
});
