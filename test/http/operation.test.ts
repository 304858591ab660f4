// How an operation's answer leaves the server: through one write path, sendAnswer (a one-off
// answer as a string, a cached list page as the bytes it keeps), in production and in the tests'
// apps, which first check those same bytes against the contract.
// Both must answer the same: status, body, Content-Type, Content-Length, and HEAD without a body.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import request from 'supertest';
import { apiKey, broker } from '../helpers/factories.ts';
import { service } from '../helpers/service-factories.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';

let production: TestApp;
let validated: TestApp;

before(async () => {
  production = await createTestApp({ validateResponses: false }, { workers: false });
  validated = await createTestApp({}, { workers: false });
});
after(async () => {
  await production?.close();
  await validated?.close();
});

/** A broker and key named alike in both apps; their ids differ, so answers are compared with ids replaced. */
async function sameKey(app: TestApp, mode: 'live' | 'test'): Promise<{ key: string; ids: string[] }> {
  const brokerId = (await broker(app.prisma, { name: 'Same broker' })).id;
  const key = await apiKey(app.prisma, { brokerId, mode, scopes: ['admin:full'], name: 'Same key' });
  return { key: key.key, ids: [brokerId, key.id] };
}

const withoutIds = (text: string, ids: string[]): string => ids.reduce((t, id) => t.split(id).join('<id>'), text);

function assertSent(res: request.Response, where: string): void {
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8', where);
  assert.equal(res.headers['content-length'], String(Buffer.byteLength(res.text)), where);
}

describe('an operation\'s answer, as production sends it and as a validated app does', () => {
  test('GET auth-check: the same bytes and headers; HEAD has the length and no body', async () => {
    const answers = [];
    for (const app of [production, validated]) {
      const { key, ids } = await sameKey(app, 'live');
      const res = await request(app.app).get('/api/v1/auth-check').set('Authorization', `Bearer ${key}`).expect(200);
      assertSent(res, 'GET');
      const head = await request(app.app).head('/api/v1/auth-check').set('Authorization', `Bearer ${key}`).expect(200);
      assert.equal(head.headers['content-length'], res.headers['content-length']);
      assert.equal(head.text, undefined, 'HEAD has no body');
      answers.push(withoutIds(res.text, ids));
    }
    assert.equal(answers[0], answers[1]);
    assert.equal(JSON.parse(answers[0]!).data.key_name, 'Same key');
  });

  test('a cached list page (sent as stored bytes): the same bytes, a Content-Length in bytes, HEAD without body', async () => {
    const answers = [];
    for (const app of [production, validated]) {
      const { key, ids } = await sameKey(app, 'live');
      // Characters of two to four UTF-8 bytes: Content-Length counts bytes, not characters.
      await service(app, { brokerId: ids[0]!, serviceNumber: 700_000_001, customerName: 'Zoë Ångström 😀 株式会社', createdAt: new Date('2025-01-02T03:04:05Z') });
      await service(app, { brokerId: ids[0]!, serviceNumber: 700_000_002, customerName: 'Plain Ltd', createdAt: new Date('2025-01-03T03:04:05Z') });
      const texts = [];
      // The first read builds and caches the page; the second is served from the cache.
      for (let i = 0; i < 2; i++) {
        const res = await request(app.app).get('/api/v1/services?limit=25').set('Authorization', `Bearer ${key}`).expect(200);
        assertSent(res, `GET #${i + 1}`);
        texts.push(res.text);
      }
      assert.equal(texts[0], texts[1], 'the cached page is the page');
      const head = await request(app.app).head('/api/v1/services?limit=25').set('Authorization', `Bearer ${key}`).expect(200);
      assert.equal(head.headers['content-length'], String(Buffer.byteLength(texts[0]!)));
      assert.equal(head.text, undefined, 'HEAD has no body');
      answers.push(withoutIds(texts[0]!, ids));
    }
    assert.equal(answers[0], answers[1]);
    const names = (JSON.parse(answers[0]!) as { data: Array<{ customer_name: string }> }).data.map((s) => s.customer_name);
    assert.deepEqual(names.sort(), ['Plain Ltd', 'Zoë Ångström 😀 株式会社']);
  });

  test('a sandbox POST answered 202: the same status, body shape and headers', async () => {
    const answers = [];
    for (const app of [production, validated]) {
      const { key } = await sameKey(app, 'test');
      const res = await request(app.app)
        .post('/api/v1/service-create')
        .set('Authorization', `Bearer ${key}`)
        .set('X-Test-Scenario', 'provider_review')
        .send({ plan: 'Basic VPS', hostname: 'web.client.example', customer_email: 'ops@client.example' });
      assertSent(res, `${res.status} ${res.text}`);
      answers.push(res);
    }
    assert.equal(answers[0]!.status, answers[1]!.status);
    assert.ok([200, 202].includes(answers[0]!.status), answers[0]!.text);
    assert.deepEqual(Object.keys(answers[0]!.body.data).sort(), Object.keys(answers[1]!.body.data).sort());
    assert.equal(answers[0]!.body.success, true);
  });
});
