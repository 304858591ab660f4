import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { request as request_, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import request from 'supertest';
import { parse } from 'yaml';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import express from 'express';
import { loadContract } from '../../src/http/contract.ts';
import { DATED_EXAMPLES, datedTexts, startOfUtcDay } from '../../src/http/dated-examples.ts';
import { PublishedDocument, registerDocs } from '../../src/http/docs.ts';

let t: TestApp;
before(async () => {
  t = await createTestApp({}, { workers: false });
});
after(async () => t.close());

/** A published file as served today: the contract's dated examples set to the start of this UTC day (dated-examples.ts). */
function servedToday(file: string): string {
  const document = parse(readFileSync('openapi.yaml', 'utf8')) as Record<string, unknown>;
  return datedTexts(document, [readFileSync(file, 'utf8')])(startOfUtcDay(new Date()))[0]!;
}
const servedYaml = () => servedToday('openapi.yaml');

describe('published contract and docs (no key needed)', () => {
  it('GET /openapi.yaml is the contract file, byte for byte but for its dated examples, set to today', async () => {
    const res = await request(t.app).get('/openapi.yaml');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /yaml/);
    assert.equal(res.text, servedYaml());
    // The served text is the file with each dated value replaced, nothing else.
    const [file, served] = [readFileSync('openapi.yaml', 'utf8').split('\n'), res.text.split('\n')];
    assert.equal(served.length, file.length);
    const changed = served.filter((line, i) => line !== file[i]);
    assert.deepEqual(changed.map((line) => line.trim()), DATED_EXAMPLES.map((path) => `${path.at(-1)}: '${startOfUtcDay(new Date())}'`));
  });

  it('GET /openapi.json is the same document as JSON', async () => {
    const res = await request(t.app).get('/openapi.json');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /json/);
    assert.deepEqual(res.body, parse(servedYaml()));
    assert.equal(Object.keys(res.body.paths).length, 31);
  });

  it('recoverWebhookEndpoint\'s since example is the start of the day the contract is read, a year from now too', async () => {
    const contract = loadContract();
    const example = (doc: Record<string, unknown>) => DATED_EXAMPLES[0]!.reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], doc);
    const fixed = example(contract.document);
    assert.equal(DATED_EXAMPLES[0]!.at(-1), 'since');
    let clock = new Date('2027-12-02T13:45:00Z');
    const app = express();
    registerDocs(app, contract, () => clock);
    const first = await request(app).get('/openapi.json');
    assert.equal(example(first.body), '2027-12-02T00:00:00Z');
    assert.notEqual(example(first.body), fixed);
    assert.equal(example(parse((await request(app).get('/openapi.yaml')).text)), '2027-12-02T00:00:00Z');
    // The next day: a new document, a new validator.
    clock = new Date('2027-12-03T00:00:01Z');
    const next = await request(app).get('/openapi.json');
    assert.equal(example(next.body), '2027-12-03T00:00:00Z');
    assert.notEqual(next.headers.etag, first.headers.etag);
    assert.equal((await request(app).get('/openapi.json').set('If-None-Match', String(first.headers.etag))).status, 200);
    // The reference's embedded contract too: the day's date where the file has the placeholder.
    const html = (await request(app).get('/docs').set('Accept-Encoding', 'identity')).text;
    assert.ok(html.includes('2027-12-03T00:00:00Z') && !html.includes(String(fixed)));
  });

  it('GET /docs serves the Redoc reference with every operation', async () => {
    const res = await request(t.app).get('/docs');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /html/);
    for (const op of ['sendInvoicesReport', 'createService', 'manageRequest', 'listRequests', 'createWebhookEndpoint', 'listEvents']) {
      assert.ok(res.text.includes(op), `docs mention ${op}`);
    }
  });

  // One row per published document: compressed when the client accepts it, and the same bytes
  // once decompressed; as it is for a client that does not.
  const published: Array<[path: string, original: () => Buffer]> = [
    ['/docs', () => Buffer.from(servedToday('docs/index.html'))],
    ['/openapi.yaml', () => Buffer.from(servedYaml())],
  ];
  for (const [path, served] of published) {
    for (const encoding of ['gzip', 'br', 'deflate']) {
      it(`GET ${path} with Accept-Encoding: ${encoding} is compressed, the same bytes decompressed`, async () => {
        const res = await rawGet(path, encoding);
        assert.equal(res.status, 200);
        assert.equal(res.headers['content-encoding'], encoding);
        assert.match(String(res.headers.vary), /Accept-Encoding/i);
        const original = served();
        const body = decompress(encoding, res.body as Buffer);
        assert.ok(res.body.length < original.length / 3, `${res.body.length} of ${original.length} bytes`);
        assert.ok(body.equals(original));
      });
    }
    it(`GET ${path} without Accept-Encoding is sent as it is`, async () => {
      const res = await request(t.app).get(path).set('Accept-Encoding', 'identity');
      assert.equal(res.headers['content-encoding'], undefined);
      assert.equal(res.text, served().toString('utf8'));
    });
  }

  it('GET /openapi.json with Accept-Encoding: gzip is compressed', async () => {
    const res = await rawGet('/openapi.json', 'gzip');
    assert.equal(res.headers['content-encoding'], 'gzip');
    assert.deepEqual(JSON.parse(gunzipSync(res.body).toString('utf8')), parse(servedYaml()));
  });

  // Compressed once, revalidated cheaply (issue 24): validators per representation, 304 when they match.
  for (const path of ['/docs', '/openapi.yaml', '/openapi.json']) {
    it(`GET ${path}: ETag per coding, Last-Modified, Cache-Control: no-cache; If-None-Match and If-Modified-Since answer 304`, async () => {
      const plain = await request(t.app).get(path).set('Accept-Encoding', 'identity');
      const br = await rawGet(path, 'br');
      for (const res of [plain, br]) {
        assert.match(String(res.headers.etag), /^"[A-Za-z0-9_-]+(-br)?"$/);
        assert.ok(!Number.isNaN(Date.parse(String(res.headers['last-modified']))));
        assert.equal(res.headers['cache-control'], 'no-cache');
        assert.match(String(res.headers.vary), /Accept-Encoding/i);
      }
      assert.notEqual(plain.headers.etag, br.headers.etag, 'each representation has its own validator');
      assert.equal(br.headers.etag, `${String(plain.headers.etag).slice(0, -1)}-br"`);

      const revalidated = await request(t.app).get(path).set('Accept-Encoding', 'identity').set('If-None-Match', String(plain.headers.etag));
      assert.equal(revalidated.status, 304);
      assert.equal(revalidated.text, '');
      const brRevalidated = await rawGet(path, 'br', { 'If-None-Match': String(br.headers.etag) });
      assert.equal(brRevalidated.status, 304);
      assert.equal(brRevalidated.body.length, 0);
      // The identity validator does not match the br representation.
      assert.equal((await rawGet(path, 'br', { 'If-None-Match': String(plain.headers.etag) })).status, 200);
      const since = await request(t.app).get(path).set('Accept-Encoding', 'identity').set('If-Modified-Since', String(plain.headers['last-modified']));
      assert.equal(since.status, 304);
      const changed = await request(t.app).get(path).set('Accept-Encoding', 'identity').set('If-None-Match', '"something-else"');
      assert.equal(changed.status, 200);
    });
  }

  it('a coding is made once: later requests get the very bytes the first one made', async () => {
    const doc = new PublishedDocument(readFileSync('docs/index.html'), 'text/html; charset=utf-8', new Date());
    const first = await doc.encoded('br');
    assert.equal(await doc.encoded('br'), first, 'the same Buffer, not a second compression');
    assert.ok(brotliDecompressSync(first).equals(doc.body));
    const again = await rawGet('/docs', 'gzip');
    assert.deepEqual((await rawGet('/docs', 'gzip')).body, again.body);
  });

  it('HEAD /docs has the headers of GET and no body', async () => {
    const res = await rawGet('/docs', 'gzip', {}, 'HEAD');
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-encoding'], 'gzip');
    assert.ok(Number(res.headers['content-length']) > 0);
    assert.equal(res.body.length, 0);
  });

  // Issue 24 row 8: Redoc's footer shows the Redocly logo from its CDN; the page's CSP allows those
  // image files (every one the built page names), not the CDN host or any https: image.
  it("GET /docs: the CSP's img-src allows exactly the images Redoc's bundle loads from elsewhere", async () => {
    const res = await request(t.app).get('/docs').set('Accept-Encoding', 'identity');
    const csp = String(res.headers['content-security-policy']);
    const imgSrc = /(?:^|;)\s*img-src ([^;]*)/.exec(csp)?.[1]?.trim().split(/\s+/);
    const wanted = [...new Set(readFileSync('docs/index.html', 'utf8').match(/https:\/\/cdn\.redoc\.ly\/[\w./-]+\.(?:svg|png)/g))].sort();
    assert.ok(wanted.length > 0, 'the built page loads the Redocly logo');
    assert.deepEqual(imgSrc?.sort(), ["'self'", 'data:', ...wanted].sort());
    assert.match(csp, /default-src 'self'/);
  });

  // Issue 24 row 8: Redoc lets inline code break anywhere, so narrow table columns split code words
  // (`sk_liv e_`); the page template (scripts/redoc-template.hbs) keeps them whole in tables.
  it('GET /docs keeps code words in tables whole', async () => {
    const res = await request(t.app).get('/docs').set('Accept-Encoding', 'identity');
    assert.match(res.text, /table\.md td code,\s*table\.md th code \{\s*word-break: normal;\s*overflow-wrap: normal;/);
  });

  it('server descriptions are plain text (Redoc shows them without Markdown)', () => {
    const servers = (parse(readFileSync('openapi.yaml', 'utf8')) as { servers: Array<{ description: string }> }).servers;
    for (const server of servers) assert.doesNotMatch(server.description, /[`*]/, server.description);
  });

  it('GET /favicon.ico is 204 No Content, cacheable, no error envelope (browsers ask for it with /docs)', async () => {
    const res = await request(t.app).get('/favicon.ico');
    assert.equal(res.status, 204);
    assert.equal(res.text, '');
    assert.equal(res.headers['cache-control'], 'public, max-age=86400');
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    const other = await request(t.app).get('/favicon.png');
    assert.equal(other.status, 404, 'only the one path browsers ask for by themselves');
    assert.equal(other.body.error.code, 'not_found');
  });

  it('an /api answer is not compressed (small, per request)', async () => {
    const res = await request(t.app).get('/api/v1/auth-check').set('Accept-Encoding', 'gzip');
    assert.equal(res.status, 401);
    assert.equal(res.headers['content-encoding'], undefined);
  });
});

/** The bytes as they came over the wire (supertest would decompress them). */
async function rawGet(
  path: string,
  encoding: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  const server = t.app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise((resolve, reject) => {
      request_({ host: '127.0.0.1', port, path, method, headers: { 'Accept-Encoding': encoding, ...headers } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      })
        .on('error', reject)
        .end();
    });
  } finally {
    server.close();
  }
}

function decompress(encoding: string, body: Buffer): Buffer {
  if (encoding === 'gzip') return gunzipSync(body);
  if (encoding === 'br') return brotliDecompressSync(body);
  return inflateSync(body);
}
