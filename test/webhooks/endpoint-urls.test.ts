/**
 * With WEBHOOK_ALLOW_PRIVATE_URLS (development and tests), http and private or loopback addresses
 * may be registered; the cloud metadata address never may.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { assertError } from '../helpers/answers.ts';
import { apiKey } from '../helpers/factories.ts';
import { InvalidValueError } from '../../src/shared/errors.ts';
import type { ResolveAll } from '../../src/webhooks/destination.ts';
import { checkUrl } from '../../src/webhooks/endpoint-use-cases.ts';

let t: TestApp;
let key: string;
let sandboxKey: string;
before(async () => {
  t = await createTestApp({ webhookAllowPrivateUrls: true }, { workers: false });
  key = (await apiKey(t.prisma)).key;
  sandboxKey = (await apiKey(t.prisma, { mode: 'test' })).key;
});
after(async () => {
  await t?.close();
});

const create = (url: string, as = key) => request(t.app).post('/api/v1/webhook-endpoints').set('Authorization', `Bearer ${as}`).send({ url });

const rows: Array<[url: string, allowed: boolean]> = [
  ['http://127.0.0.1:8080/hook', true],
  ['http://localhost:8080/hook', true],
  ['https://10.0.0.7/hook', true],
  ['http://169.254.169.254/latest/meta-data/', false],
  ['https://[::ffff:169.254.169.254]/', false],
  ['ftp://127.0.0.1/hook', false],
];
for (const [url, allowed] of rows) {
  test(`with the setting, ${url}: ${allowed ? 'registered' : '400 invalid_parameter naming url'}`, async () => {
    const res = await create(url);
    if (allowed) assert.equal(res.status, 200, JSON.stringify(res.body));
    else assert.equal(assertError(res, 400, 'invalid_parameter').field, 'url');
  });
}

// URLs the parser reads otherwise than they are written: each would be shown as sent and delivered
// to another host. Refused for live and sandbox keys alike, on create and on update.
const mangled = ['https://hooks.example\\@127.0.0.1/x', 'https://user@127.0.0.1/x', 'http://127.0.0.1\\x', 'https:///x', 'http:127.0.0.1/x', 'https://127.0.0.1:0/x'];
for (const mode of ['live', 'sandbox'] as const) {
  for (const url of mangled) {
    test(`${mode}: ${url} is refused with 400 invalid_parameter naming url, on create and update`, async () => {
      const as = mode === 'live' ? key : sandboxKey;
      assert.equal(assertError(await create(url, as), 400, 'invalid_parameter').field, 'url');
      const made = await create('http://127.0.0.1:8080/ok', as);
      assert.equal(made.status, 200, JSON.stringify(made.body));
      const res = await request(t.app).post(`/api/v1/webhook-endpoints/${made.body.data.id}`).set('Authorization', `Bearer ${as}`).send({ url });
      assert.equal(assertError(res, 400, 'invalid_parameter').field, 'url');
    });
  }

  test(`${mode}: an accepted URL is stored and shown as parsed`, async () => {
    const as = mode === 'live' ? key : sandboxKey;
    const made = await create('HTTP://127.0.0.1:80/a/../hook?x=1', as);
    assert.equal(made.status, 200, JSON.stringify(made.body));
    assert.equal(made.body.data.url, 'http://127.0.0.1/hook?x=1');
    const shown = await request(t.app).get(`/api/v1/webhook-endpoints/${made.body.data.id}`).set('Authorization', `Bearer ${as}`);
    assert.equal(shown.body.data.url, 'http://127.0.0.1/hook?x=1');
    const stored = await t.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: made.body.data.id } });
    assert.equal(stored.url, 'http://127.0.0.1/hook?x=1');
    const updated = await request(t.app).post(`/api/v1/webhook-endpoints/${made.body.data.id}`).set('Authorization', `Bearer ${as}`).send({ url: 'http://LOCALHOST:8080/b/./c' });
    assert.equal(updated.body.data.url, 'http://localhost:8080/b/c');
  });
}

// Registration's check through a resolver of the test's own (src/webhooks/endpoint-use-cases.ts,
// checkUrl): a host is judged by every address it resolves to; one that does not resolve is refused
// (issue 40 item 5).
const resolving = (addresses: string[] | Error): ResolveAll => (_host, _options, callback) =>
  addresses instanceof Error ? callback(Object.assign(addresses, { code: 'ENOTFOUND' }), []) : callback(null, addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));

const hostRows: Array<[why: string, addresses: string[] | Error, allowed: boolean]> = [
  ['resolves to a public address', ['93.184.216.34'], true],
  ['resolves to a private address', ['10.0.0.7'], false],
  ['resolves to a public and a loopback address', ['93.184.216.34', '127.0.0.1'], false],
  ['resolves to the metadata address', ['169.254.169.254'], false],
  ['does not resolve', new Error('no such host'), false],
  ['resolves (by the test\'s resolver) to 127.0.0.1', ['127.0.0.1'], false],
];
for (const [why, addresses, allowed] of hostRows) {
  test(`without the setting, a host that ${why}: ${allowed ? 'taken' : 'refused, naming url'}`, async () => {
    const checking = checkUrl('https://hooks.broker.example/capi', { destinations: { allowPrivate: false }, resolve: resolving(addresses) });
    if (allowed) assert.equal(await checking, 'https://hooks.broker.example/capi');
    else await assert.rejects(checking, (err: unknown) => err instanceof InvalidValueError && err.field === 'url' && err.rule === 'destination');
  });
}

// Issue 40 item 5: spellings that reached this machine or the metadata service, each refused on
// create and on update with 400 invalid_parameter naming url. Names resolve as on this machine
// (localhost and vm from /etc/hosts; no DNS beyond it, so nip.io and .invalid do not resolve).
const spellings: Array<[url: string, allowPrivate: boolean, says: RegExp]> = [
  ['https://LOCALHOST.:19443/', false, /host localhost\. must not end with a dot/],
  ['https://VM.:19443/', false, /host vm\. must not end with a dot/],
  ['https://localhost/', false, /host localhost is this machine \(localhost\)/],
  ['https://x.localhost/', false, /host x\.localhost is this machine \(localhost\)/],
  ['https://vm/', false, /vm resolves to 127\.0\.0\.1, which is loopback/],
  ['https://127.0.0.1.nip.io/', false, /host 127\.0\.0\.1\.nip\.io does not resolve/],
  ['https://nonexistent.invalid/', false, /host nonexistent\.invalid does not resolve/],
  ['http://localhost.:8080/', true, /must not end with a dot/],
  ['https://nonexistent.invalid/', true, /does not resolve/],
  ['https://[2002:a9fe:a9fe::]/', true, /address 2002:a9fe:a9fe:: is a cloud metadata address/],
  ['https://[::a9fe:a9fe]/', true, /address ::a9fe:a9fe is a cloud metadata address/],
  ['https://[::169.254.169.254]/', true, /a cloud metadata address/],
  ['https://[64:ff9b::a9fe:a9fe]/', true, /a cloud metadata address/],
  ['https://[64:ff9b:1::a9fe:a9fe]/', true, /a cloud metadata address/],
  ['https://[2001:0:4136:e378:8000:63bf:5601:5601]/', true, /a cloud metadata address/],
  ['https://[2001:0:a9fe:a9fe::1]/', true, /a cloud metadata address/],
];
describe('issue 40 item 5: names and spellings refused on create and update', () => {
  let strict: TestApp;
  let strictKey: string;
  let looseKey: string;
  before(async () => {
    strict = await createTestApp({ webhookAllowPrivateUrls: false }, { workers: false });
    strictKey = (await apiKey(strict.prisma)).key;
    looseKey = (await apiKey(t.prisma)).key;
  });
  after(async () => {
    await strict?.close();
  });
  for (const [url, allowPrivate, says] of spellings) {
    test(`${allowPrivate ? 'with' : 'without'} private URLs allowed, ${url} → 400 invalid_parameter naming url`, async () => {
      const [app, as, good] = allowPrivate ? [t.app, looseKey, 'http://127.0.0.1:8080/ok'] : [strict.app, strictKey, 'https://93.184.216.34/ok'];
      const made = await request(app).post('/api/v1/webhook-endpoints').set('Authorization', `Bearer ${as}`).send({ url: good });
      assert.equal(made.status, 200, JSON.stringify(made.body));
      const created = await request(app).post('/api/v1/webhook-endpoints').set('Authorization', `Bearer ${as}`).send({ url });
      const updated = await request(app).post(`/api/v1/webhook-endpoints/${made.body.data.id}`).set('Authorization', `Bearer ${as}`).send({ url });
      for (const res of [created, updated]) {
        const details = assertError(res, 400, 'invalid_parameter');
        assert.equal(details.field, 'url');
        assert.match(res.body.error.message, says);
      }
      const kept = await request(app).get(`/api/v1/webhook-endpoints/${made.body.data.id}`).set('Authorization', `Bearer ${as}`);
      assert.equal(kept.body.data.url, good, 'a refused update changes nothing');
    });
  }

  test('a name under .example resolves in tests (test/helpers/app.ts), so the contract\'s examples register', async () => {
    const res = await request(strict.app).post('/api/v1/webhook-endpoints').set('Authorization', `Bearer ${strictKey}`).send({ url: 'https://hooks.broker.example/capi' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });
});
