/**
 * The console's page and files (src/console/static.ts) as the server answers them: the bundle under
 * /console/assets, the shell only to a started session, with its CSRF token, mode and broker in
 * <meta> tags (escaped), and the console's CSP on all of it.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import request from 'supertest';
import { CONSOLE_CSP, CONSOLE_SHELL_PATHS } from '../../src/console/index.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, broker } from '../helpers/factories.ts';

let t: TestApp;

before(async () => {
  t = await createTestApp();
});
after(() => t?.close());

/** A session cookie as a browser gets it: the link from the API, then its start page's form. */
async function sessionCookie(key: string): Promise<string> {
  const link = await request(t.app).post('/api/v1/console-sessions').set('Authorization', `Bearer ${key}`);
  assert.equal(link.status, 200, JSON.stringify(link.body));
  const token = new URL(link.body.data.url).searchParams.get('token') ?? '';
  const started = await request(t.app).post('/console/start').set('Sec-Fetch-Site', 'same-origin').type('form').send({ token });
  assert.equal(started.status, 303);
  const setCookie = ([] as string[]).concat(started.headers['set-cookie'] ?? [])[0] ?? '';
  return setCookie.split(';')[0]!;
}

const meta = (html: string, name: string) => new RegExp(`<meta name="${name}" content="([^"]*)">`).exec(html)?.[1];

test('the bundle is served under /console/assets with the console CSP; a missing file is a 404', async () => {
  const js = await request(t.app).get('/console/assets/console.js');
  assert.equal(js.status, 200);
  assert.match(js.headers['content-type'] ?? '', /javascript/);
  assert.equal(js.headers['content-security-policy'], CONSOLE_CSP);
  const css = await request(t.app).get('/console/assets/console-style.css');
  assert.equal(css.status, 200);
  assert.match(css.headers['content-type'] ?? '', /text\/css/);
  assert.equal((await request(t.app).get('/console/assets/nothing.js')).status, 404);
});

test('without a session every view answers the 401 page, under the console CSP, and no script', async () => {
  for (const path of ['/console', '/console/', '/console/events', '/console/webhook-endpoints/we_x']) {
    const res = await request(t.app).get(path);
    assert.equal(res.status, 401, path);
    assert.match(res.headers['content-type'] ?? '', /text\/html/);
    assert.equal(res.headers['content-security-policy'], CONSOLE_CSP);
    assert.doesNotMatch(res.text, /<script/);
  }
  const forged = await request(t.app).get('/console/').set('Cookie', 'console_session=forged');
  assert.equal(forged.status, 401);
});

test("a started session gets the shell: its CSRF token, its key's mode and its broker's name, escaped", async () => {
  const b = await broker(t.prisma, { name: 'Shop <b>"&\'' });
  for (const mode of ['live', 'test'] as const) {
    const key = await apiKey(t.prisma, { brokerId: b.id, mode });
    const cookie = await sessionCookie(key.key);
    const res = await request(t.app).get('/console/requests').set('Cookie', cookie);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers['content-security-policy'], CONSOLE_CSP);
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.equal(meta(res.text, 'console-mode'), mode);
    assert.equal(meta(res.text, 'console-broker'), 'Shop &lt;b&gt;&quot;&amp;&#39;');
    assert.match(meta(res.text, 'csrf-token') ?? '', /^[\w-]{20,}$/);
    assert.match(res.text, /<script type="module" src="\/console\/assets\/console.js"><\/script>/);
  }
});

test('the shell covers /console and its views, not the link\'s route or the assets', () => {
  for (const path of ['/console', '/console/', '/console/events', '/console/startx', '/console/assets-x']) assert.match(path, CONSOLE_SHELL_PATHS, path);
  for (const path of ['/console/start', '/console/assets/console.js', '/consoles', '/api/v1/events']) assert.doesNotMatch(path, CONSOLE_SHELL_PATHS, path);
});
