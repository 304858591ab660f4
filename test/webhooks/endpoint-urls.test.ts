/**
 * With WEBHOOK_ALLOW_PRIVATE_URLS (development and tests), http and private or loopback addresses
 * may be registered; the cloud metadata address never may.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
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
// checkUrl): a host is judged by every address it resolves to; one that does not resolve is taken,
// since every delivery checks again when it connects.
const resolving = (addresses: string[] | Error): ResolveAll => (_host, _options, callback) =>
  addresses instanceof Error ? callback(Object.assign(addresses, { code: 'ENOTFOUND' }), []) : callback(null, addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));

const hostRows: Array<[why: string, addresses: string[] | Error, allowed: boolean]> = [
  ['resolves to a public address', ['93.184.216.34'], true],
  ['resolves to a private address', ['10.0.0.7'], false],
  ['resolves to a public and a loopback address', ['93.184.216.34', '127.0.0.1'], false],
  ['resolves to the metadata address', ['169.254.169.254'], false],
  ['does not resolve (yet)', new Error('no such host'), true],
];
for (const [why, addresses, allowed] of hostRows) {
  test(`without the setting, a host that ${why}: ${allowed ? 'taken' : 'refused, naming url'}`, async () => {
    const checking = checkUrl('https://hooks.broker.example/capi', { destinations: { allowPrivate: false }, resolve: resolving(addresses) });
    if (allowed) assert.equal(await checking, 'https://hooks.broker.example/capi');
    else await assert.rejects(checking, (err: unknown) => err instanceof InvalidValueError && err.field === 'url' && err.rule === 'destination');
  });
}
