import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { get, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import request from 'supertest';
import { parse } from 'yaml';
import { createTestApp, type TestApp } from '../helpers/app.ts';

let t: TestApp;
before(async () => {
  t = await createTestApp({}, { workers: false });
});
after(async () => t.close());

describe('published contract and docs (no key needed)', () => {
  it('GET /openapi.yaml is the contract file, byte for byte', async () => {
    const res = await request(t.app).get('/openapi.yaml');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /yaml/);
    assert.equal(res.text, readFileSync('openapi.yaml', 'utf8'));
  });

  it('GET /openapi.json is the same document as JSON', async () => {
    const res = await request(t.app).get('/openapi.json');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /json/);
    assert.deepEqual(res.body, parse(readFileSync('openapi.yaml', 'utf8')));
    assert.equal(Object.keys(res.body.paths).length, 14);
  });

  it('GET /docs serves the Redoc reference with every operation', async () => {
    const res = await request(t.app).get('/docs');
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /html/);
    for (const op of ['sendInvoicesReport', 'createService', 'manageRequest', 'listRequests']) {
      assert.ok(res.text.includes(op), `docs mention ${op}`);
    }
  });

  // One row per published document: compressed when the client accepts it, and the same bytes
  // once decompressed; as it is for a client that does not.
  const published: Array<[path: string, file: string]> = [
    ['/docs', 'docs/index.html'],
    ['/openapi.yaml', 'openapi.yaml'],
  ];
  for (const [path, file] of published) {
    for (const encoding of ['gzip', 'br', 'deflate']) {
      it(`GET ${path} with Accept-Encoding: ${encoding} is compressed, the same bytes decompressed`, async () => {
        const res = await rawGet(path, encoding);
        assert.equal(res.status, 200);
        assert.equal(res.headers['content-encoding'], encoding);
        assert.match(String(res.headers.vary), /Accept-Encoding/i);
        const original = readFileSync(file);
        const body = decompress(encoding, res.body as Buffer);
        assert.ok(res.body.length < original.length / 3, `${res.body.length} of ${original.length} bytes`);
        assert.ok(body.equals(original));
      });
    }
    it(`GET ${path} without Accept-Encoding is sent as it is`, async () => {
      const res = await request(t.app).get(path).set('Accept-Encoding', 'identity');
      assert.equal(res.headers['content-encoding'], undefined);
      assert.equal(res.text, readFileSync(file, 'utf8'));
    });
  }

  it('GET /openapi.json with Accept-Encoding: gzip is compressed', async () => {
    const res = await rawGet('/openapi.json', 'gzip');
    assert.equal(res.headers['content-encoding'], 'gzip');
    assert.deepEqual(JSON.parse(gunzipSync(res.body).toString('utf8')), parse(readFileSync('openapi.yaml', 'utf8')));
  });

  it('an /api answer is not compressed (small, per request)', async () => {
    const res = await request(t.app).get('/api/v1/auth-check').set('Accept-Encoding', 'gzip');
    assert.equal(res.status, 401);
    assert.equal(res.headers['content-encoding'], undefined);
  });
});

/** The bytes as they came over the wire (supertest would decompress them). */
async function rawGet(path: string, encoding: string): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  const server = t.app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise((resolve, reject) => {
      get({ host: '127.0.0.1', port, path, headers: { 'Accept-Encoding': encoding } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      }).on('error', reject);
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
