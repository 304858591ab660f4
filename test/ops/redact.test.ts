/** No key material in a log line, however it was written into a URL (src/ops/redact.ts). One row per form. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { generateApiKey } from '../../src/auth/keys.ts';
import { cachedScrub, scrubPath, scrubSecrets, scrubUrl } from '../../src/ops/redact.ts';
import { holdsPartOf, SEPARATORS } from '../helpers/key-spellings.ts';

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

describe('mangled keys in a path (issue 32 row 4)', () => {
  // Each spelling with a live and a test prefix, as the probe sent them to GET /api/v1/reports/{report_id}.
  const spellings: Array<[string, (mode: 'live' | 'test', secret: string) => string]> = [
    ['as issued', (m, s) => `sk_${m}_${s}`],
    ['%0a after the prefix', (m, s) => `sk_${m}_%0a${s}`],
    ['%0A after the prefix', (m, s) => `sk_${m}_%0A${s}`],
    ['%20 after the prefix', (m, s) => `sk_${m}_%20${s}`],
    ['%09 after the prefix', (m, s) => `sk_${m}_%09${s}`],
    ['%0d%0a after the prefix', (m, s) => `sk_${m}_%0d%0a${s}`],
    ['+ after the prefix', (m, s) => `sk_${m}_+${s}`],
    ['. after the prefix', (m, s) => `sk_${m}_.${s}`],
    ['. in place of _', (m, s) => `sk.${m}.${s}`],
    ['- in place of _', (m, s) => `sk-${m}-${s}`],
    ['%2D in place of _', (m, s) => `sk%2D${m}%2D${s}`],
    ['space in place of _', (m, s) => `sk%20${m}%20${s}`],
    ['no separator after the mode', (m, s) => `sk_${m}${s}`],
    ['no separator at all', (m, s) => `sk${m}${s}`],
    ['upper case', (m, s) => `SK_${m.toUpperCase()}_${s}`],
    ['mixed case and -', (m, s) => `Sk-${m[0]!.toUpperCase()}${m.slice(1)}-${s}`],
    ['glued to a segment', (m, s) => `x_sk_${m}_${s}`],
    ['every character percent-encoded', (m, s) => everyCharEncoded(`sk_${m}_%0a${s}`)],
    ['encoded twice', (m, s) => encodeURIComponent(`sk_${m}_%0a${s}`)],
    ['the bare secret', (_m, s) => s],
    ['the bare secret, percent-encoded', (_m, s) => everyCharEncoded(s)],
    ['the bare secret after another segment', (_m, s) => `x.${s}`],
  ];
  for (const mode of ['live', 'test'] as const) {
    const secret = generateApiKey(mode).key.slice(8);
    for (const [form, spell] of spellings) {
      const path = `/api/v1/reports/${spell(mode, secret)}`;
      test(`${mode}, ${form}: neither the log line nor api_logs.path holds the secret`, () => {
        for (const shown of [scrubSecrets(path), scrubPath(path), scrubUrl(path), scrubUrl(`${path}?limit=1`, new Set(['limit']))]) {
          assert.equal(shown.includes(secret), false, shown);
          assert.equal(shown.includes(secret.slice(0, 16)), false, `half the secret: ${shown}`);
          assert.match(shown, /^\/api\/v1\/reports\/.*\[redacted\]/, shown);
        }
      });
    }
  }

  test('a secret in a known query value is redacted too', () => {
    const secret = generateApiKey('live').key.slice(8);
    const shown = scrubUrl(`/api/v1/services?search=${secret}&limit=5`, new Set(['search', 'limit']));
    assert.equal(shown, '/api/v1/services?search=[redacted]&limit=5');
  });

  test("the contract's own ids and ordinary paths are logged as they were sent", () => {
    for (const path of [
      '/api/v1/services/123456/password',
      '/api/v1/requests/REQ-000044/manage',
      '/api/v1/reports/5b0c8a52-31f4-4d7e-9d3c-2f7f1b6f0a11',
      '/api/v1/webhook-endpoints/we_4bK9xT2mQ7vR1nL8pZ3cY6dW/rotate-secret',
      '/api/v1/webhook-endpoints/we_4bK9xT2mQ7vR1nL8pZ3cY6dW/recover',
      '/api/v1/events/evt_2Jf8Kq1Vx9Lm4Tb7Rc3Np6Zs/redeliver',
      '/api/v1/events?starting_after=evt_5Rt1Mz8Kq3Vn6Lb9Xc2Hd7Wp&limit=10',
      '/api/v1/reports/services',
      '/healthz',
    ]) {
      assert.equal(scrubUrl(path, new Set(['starting_after', 'limit'])), path);
      assert.equal(scrubSecrets(path.split('?')[0]!), path.split('?')[0]);
    }
  });

  test('a 31-character run of id characters is not a secret; 32 and more are, but for a UUID', () => {
    assert.equal(scrubSecrets(`/x/${'a'.repeat(31)}`), `/x/${'a'.repeat(31)}`);
    assert.equal(scrubSecrets(`/x/${'a'.repeat(32)}`), '/x/[redacted]');
    assert.equal(scrubSecrets(`/x/${'a'.repeat(33)}/y`), '/x/[redacted]/y');
    assert.equal(scrubSecrets(`/x/${'a_-b'.repeat(8)}`), '/x/[redacted]');
    // A download token (43 base64url characters) typed into an /api path.
    assert.equal(scrubSecrets('/api/v1/reports/Xq3_-vA9kLm2Pz7RtY8wB1nC4dE6fG0hJ5sU2oI9aQe'), '/api/v1/reports/[redacted]');
    assert.equal(scrubSecrets('/api/v1/reports/5B0C8A52-31F4-4D7E-9D3C-2F7F1B6F0A11'), '/api/v1/reports/5B0C8A52-31F4-4D7E-9D3C-2F7F1B6F0A11');
    assert.equal(scrubSecrets('/api/v1/reports/5b0c8a52-31f4-4d7e-9d3c-2f7f1b6f0a11x'), '/api/v1/reports/[redacted]');
  });

  test('scrubbing is idempotent: a redacted line scrubbed again is unchanged', () => {
    for (const path of ['/x/sk_live_[redacted]', '/x/sk_test_[redacted]%20y', '/x/[redacted]']) {
      assert.equal(scrubSecrets(scrubSecrets(path)), scrubSecrets(path));
    }
    assert.equal(scrubSecrets('/x/sk_live_%0aAbc'), '/x/sk_live_[redacted]');
  });

  test('a key glued to a long run: both go, the mode stays', () => {
    const secret = generateApiKey('test').key.slice(8);
    assert.equal(scrubSecrets(`/x/${'a'.repeat(40)}sk_test_${secret}`), '/x/[redacted]sk_test_[redacted]');
    assert.equal(scrubSecrets(`/x/${'a'.repeat(40)}SK-TEST-${secret}`), '/x/[redacted]sk_test_[redacted]');
  });
});

describe('a key broken by a separator (issue 40 item 1)', () => {
  const secret = 'pPmDoZmxw5ghTdOmMgtq8FHqHg8ScK1f';
  const positions: Array<[string, number]> = [['right after the prefix', 0], ['after the public 4', 4], ['mid-secret', 16], ['before the last', 31]];
  for (const [name, separator] of SEPARATORS) {
    for (const [where, at] of positions) {
      test(`${name} ${where}: no 5 characters of the secret in a path or a query value`, () => {
        const spelled = `sk_live_${secret.slice(0, at)}${separator}${secret.slice(at)}`;
        const path = `/api/v1/services/${spelled}`;
        for (const shown of [scrubPath(path), scrubUrl(path), scrubUrl(`${path}/password`), scrubUrl(`/api/v1/services?search=${spelled}&limit=1`, new Set(['search', 'limit']))]) {
          assert.equal(holdsPartOf(shown, secret), undefined, shown);
          assert.match(shown, /sk_live_\[redacted\]/, shown);
        }
        assert.equal(scrubPath(path), '/api/v1/services/sk_live_[redacted]');
        assert.equal(scrubUrl(`${path}/password`), '/api/v1/services/sk_live_[redacted]/password', 'the next segment is kept');
        assert.equal(scrubUrl(`/api/v1/services?search=${spelled}&limit=1`, new Set(['search', 'limit'])), '/api/v1/services?search=sk_live_[redacted]&limit=1');
      });
    }
  }

  test("the probe's example", () => {
    assert.equal(scrubPath('/api/v1/services/sk_live_pPmD%0AoZmxw5ghTdOmMgtq8FHqHg8ScK1f'), '/api/v1/services/sk_live_[redacted]');
  });

  test('a prefix seen only after decoding, with a %2F in the secret: redacted to the end of the segment as sent', () => {
    assert.equal(scrubPath(`/api/v1/services/%73k_live_pPmD%2F${secret.slice(4)}/password`), '/api/v1/services/sk_live_[redacted]/password');
    assert.equal(scrubPath(`/api/v1/services/%2573k%255Flive_pPmD%252F${secret.slice(4)}`), '/api/v1/services/sk_live_[redacted]');
  });

  test('a separator inside the prefix: the rest is one run of id characters, redacted', () => {
    for (const spelled of [`s%0Ak_live_${secret}`, `sk_li%0Ave_${secret}`, `sk%E2%80%8B_live_${secret}`]) {
      const shown = scrubPath(`/api/v1/services/${spelled}`);
      assert.equal(holdsPartOf(shown, secret), undefined, shown);
    }
  });
});

describe('download tokens (issue 32 row 3)', () => {
  const token = 'Xq3_-vA9kLm2Pz7RtY8wB1nC4dE6fG0hJ5sU2oI9aQe';
  test('a download path shows [redacted] in place of its token, however it was spelled', () => {
    for (const url of [
      `/downloads/reports/${token}`,
      `/downloads/reports/${token}/`,
      `/downloads/reports/${token}/more`,
      `/DOWNLOADS/Reports/${token}`,
      `//downloads//reports/${token}`,
      `/%64ownloads/reports/${token}`,
      `/downloads/reports/${everyCharEncoded(token)}`,
    ]) {
      for (const shown of [scrubUrl(url), scrubPath(url)]) {
        assert.equal(shown, '/downloads/reports/[redacted]', url);
      }
      assert.equal(scrubUrl(`${url}?x=1`), '/downloads/reports/[redacted]?x=[redacted]');
    }
  });

  test('the download prefix alone, and other paths, are left as they are', () => {
    for (const url of ['/downloads/reports', '/downloads/reports/', '/downloads/other/abc', '/api/v1/reports/services']) assert.equal(scrubUrl(url), url);
  });
});

describe('cachedScrub (the log line and the API log, on every request)', () => {
  /** scrubPath, counting the texts it was asked to scrub. */
  const counted = () => {
    const seen: string[] = [];
    return { seen, scrub: cachedScrub((text) => (seen.push(text), scrubPath(text))) };
  };

  test('a clean text is scrubbed once, then returned as it is', () => {
    const { seen, scrub } = counted();
    for (let i = 0; i < 3; i++) assert.equal(scrub('/api/v1/services/12345'), '/api/v1/services/12345');
    assert.deepEqual(seen, ['/api/v1/services/12345']);
  });

  test('a text that held a secret is scrubbed every time, never kept as clean', () => {
    const { seen, scrub } = counted();
    const path = `/api/v1/services/${KEY}`;
    for (let i = 0; i < 3; i++) assert.equal(scrub(path), '/api/v1/services/sk_live_[redacted]');
    assert.equal(seen.length, 3);
  });

  test('what it keeps is bounded: after many other clean texts, the first is scrubbed again', () => {
    const { seen, scrub } = counted();
    scrub('/api/v1/services');
    for (let i = 0; i < 10_000; i++) scrub(`/api/v1/services/${i}`);
    seen.length = 0;
    scrub('/api/v1/services');
    assert.deepEqual(seen, ['/api/v1/services']);
  });
});
