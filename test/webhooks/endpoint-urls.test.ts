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

let t: TestApp;
let key: string;
before(async () => {
  t = await createTestApp({ webhookAllowPrivateUrls: true }, { workers: false });
  key = (await apiKey(t.prisma)).key;
});
after(async () => {
  await t?.close();
});

const create = (url: string) => request(t.app).post('/api/v1/webhook-endpoints').set('Authorization', `Bearer ${key}`).send({ url });

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
