/**
 * Sign out in a real browser (issue 48 item 3): the console's "Sign out" ends the session on the
 * server (its cookie, kept aside, then gets 401), the browser drops the cookie, and the pages a
 * console link ends on (signed out, a used link) are in the console's style with no axe violation.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import request from 'supertest';
import { apiKey, broker, type TestApiKey } from '../helpers/factories.ts';
import { launch, screenshot, seriousViolations, type Browser } from './browser.ts';
import { startConsoleServer, type ConsoleServer } from './harness.ts';

let server: ConsoleServer;
let browser: Browser;
let key: TestApiKey;

before(async () => {
  server = await startConsoleServer();
  const b = await broker(server.t.prisma, { name: 'Northwind Hosting' });
  key = await apiKey(server.t.prisma, { brokerId: b.id, mode: 'live', rateLimit: 100_000 });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

test('"Sign out" ends the session on the server and lands on a signed-out page in the console\'s style', async () => {
  for (const width of [1280, 390]) {
    const page = await browser.page(width);
    await server.open(page, key);
    await page.getByRole('heading', { level: 1, name: 'Request logs' }).waitFor();
    const cookie = (await browser.context.cookies(server.origin)).find((c) => c.name === 'console_session');
    assert.ok(cookie, 'the session cookie is set');
    assert.equal((await request(server.t.app).get('/api/v1/auth-check').set('Cookie', `console_session=${cookie.value}`)).status, 200);

    assert.deepEqual(await seriousViolations(page), []);
    await screenshot(page, `sign-out-button-${width}`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { level: 1, name: 'Signed out' }).waitFor();
    assert.deepEqual(await seriousViolations(page), []);
    // The console's stylesheet applies: the page's column is the refused pages' (console.css `.refused`).
    assert.equal(await page.evaluate("getComputedStyle(document.querySelector('main')).maxWidth"), '640px');
    await screenshot(page, `signed-out-${width}`);

    assert.equal((await browser.context.cookies(server.origin)).some((c) => c.name === 'console_session'), false, 'the browser dropped the cookie');
    const ended = await request(server.t.app).get('/api/v1/auth-check').set('Cookie', `console_session=${cookie.value}`);
    assert.equal(ended.status, 401, 'the cookie, kept aside, no longer opens anything');
    assert.match(ended.body.error.message, /signed out/);

    await page.goto(`${server.origin}/console/events`);
    await page.getByRole('heading', { level: 1, name: 'Console session needed' }).waitFor();
    await page.close();
  }
  assert.deepEqual(browser.errors.filter((e) => !/401/.test(e)), []);
});

test('a used link shows the refused page in the console\'s style, not "Open the console"', async () => {
  const page = await browser.page(390);
  const link = await server.link(key);
  await page.goto(link);
  await page.waitForURL(`${server.origin}/console/`);
  await page.goto(link);
  await page.getByRole('heading', { level: 1, name: 'This console link does not work' }).waitFor();
  assert.equal(await page.getByRole('button', { name: 'Open the console' }).count(), 0);
  assert.equal(await page.evaluate("getComputedStyle(document.querySelector('main')).maxWidth"), '640px');
  assert.deepEqual(await seriousViolations(page), []);
  await screenshot(page, 'link-refused-390');
  await page.close();
});
