/**
 * Every console view in a real browser (issue 41): named in the navigation, reachable by keyboard,
 * usable at 375 px (no sideways scrolling of the page), no serious or critical axe-core violation,
 * and no browser console error; a screenshot of each kept under var/console-screenshots/.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import request from 'supertest';
import { apiKey, broker } from '../helpers/factories.ts';
import type { TestApiKey } from '../helpers/factories.ts';
import { startReceiver, type Receiver } from '../helpers/webhooks.ts';
import { launch, screenshot, seriousViolations, type Browser } from './browser.ts';
import { startConsoleServer, type ConsoleServer } from './harness.ts';

const VIEWS = [
  { slug: 'request-logs', name: 'Request logs' },
  { slug: 'events', name: 'Events' },
  { slug: 'webhook-endpoints', name: 'Webhook endpoints' },
  { slug: 'services', name: 'Services' },
  { slug: 'requests', name: 'Requests' },
  { slug: 'reports', name: 'Reports' },
];

let server: ConsoleServer;
let browser: Browser;
let receiver: Receiver;
let live: TestApiKey;
let sandbox: TestApiKey;
let brokerName: string;
let failed: { message: string; details: Record<string, unknown> };

const api = (key: TestApiKey) => ({
  get: (url: string) => request(server.t.app).get(url).set('Authorization', `Bearer ${key.key}`),
  post: (url: string, body: object) => request(server.t.app).post(url).set('Authorization', `Bearer ${key.key}`).send(body),
});

before(async () => {
  server = await startConsoleServer({ webhookRetrySchedule: [0], webhookAllowPrivateUrls: true });
  receiver = await startReceiver();
  const b = await broker(server.t.prisma, { approval: 'manual', name: 'Northwind Hosting' });
  brokerName = b.name;
  live = await apiKey(server.t.prisma, { brokerId: b.id, mode: 'live', rateLimit: 100_000 });
  sandbox = await apiKey(server.t.prisma, { brokerId: b.id, mode: 'test', rateLimit: 100_000 });
  const call = api(live);
  const hook = await call.post('/api/v1/webhook-endpoints', { url: receiver.url('hook'), description: 'Order system' });
  assert.equal(hook.status, 200, JSON.stringify(hook.body));
  const order = await call.post('/api/v1/service-create', { plan: 'Standard VPS', hostname: 'shop.example.com', customer_email: 'jane@example.com' });
  assert.equal(order.status, 202, JSON.stringify(order.body));
  const approved = await call.post(`/api/v1/requests/${order.body.data.request_id}/manage`, { action: 'approve' });
  assert.equal(approved.status, 200, JSON.stringify(approved.body));
  const number = approved.body.data.service_number as number;
  const pending = await call.post('/api/v1/service-create', { plan: 'Standard VPS', hostname: 'blog.example.com', customer_email: 'sam@example.com' });
  assert.equal(pending.status, 202);
  const refused = await call.post(`/api/v1/services/${number}/upgrade`, { plan: 'No Such Plan' });
  assert.equal(refused.status, 400, JSON.stringify(refused.body));
  failed = { message: refused.body.error.message, details: refused.body.error.details };
  const report = await api(sandbox).post('/api/v1/reports/services', { recipients: ['ops@example.com', 'bounce@failed.test'] });
  assert.equal(report.status, 200, JSON.stringify(report.body));
  await server.t.flushApiLog();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await receiver?.stop();
  await server?.close();
});

async function checkView(page: Page, name: string, shot: string) {
  await page.getByRole('heading', { level: 1, name }).waitFor();
  await page.getByRole('status').filter({ hasText: 'Loading' }).waitFor({ state: 'detached' }).catch(() => undefined);
  const violations = await seriousViolations(page);
  assert.deepEqual(violations, [], `${name}: ${JSON.stringify(violations, null, 1)}`);
  const overflow = (await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth')) as number;
  assert.ok(overflow <= 0, `${name} (${shot}) scrolls sideways by ${overflow}px`);
  await screenshot(page, shot);
}

describe('the console in a browser', () => {
  test('every view, by its name in the navigation, at desktop width and at 375 px, passes axe', async () => {
    for (const width of [1280, 375]) {
      const page = await browser.page(width);
      await server.open(page, live);
      assert.equal(new URL(page.url()).pathname, '/console/');
      assert.equal(await page.locator('.broker').innerText(), brokerName);
      const nav = page.getByRole('navigation', { name: 'Console' });
      assert.deepEqual(await nav.getByRole('link').allTextContents(), VIEWS.map((v) => v.name));
      for (const view of VIEWS) {
        await nav.getByRole('link', { name: view.name, exact: true }).click();
        assert.equal(new URL(page.url()).pathname, `/console/${view.slug}`);
        await checkView(page, view.name, `${view.slug}-${width}`);
      }
      await page.close();
    }
    assert.deepEqual(browser.errors, []);
  });

  test('by keyboard alone: skip link, navigation, a request log entry opened with its error in full and a curl to copy', async () => {
    const page = await browser.page();
    await server.open(page, live);
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate('document.activeElement?.textContent'), 'Skip to content');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate('document.activeElement?.textContent'), 'Request logs');
    await page.getByRole('heading', { level: 1, name: 'Request logs' }).waitFor();
    await page.getByLabel('Status').selectOption('4xx');
    await page.getByLabel('Operation').fill('upgradeService');
    await page.getByRole('button', { name: 'Apply filters' }).press('Enter');
    // The filtered page: a row of the refused upgrade alone (the rows before the filter are gone).
    await page.getByRole('button', { name: /^Details/ }).nth(1).waitFor({ state: 'detached' });
    const details = page.getByRole('row').filter({ hasText: 'upgradeService' }).getByRole('button', { name: /^Details/ });
    await details.focus();
    await page.keyboard.press('Enter');
    const detail = page.locator('.detail');
    await detail.waitFor();
    const text = await detail.innerText();
    assert.ok(text.includes(failed.message), text);
    assert.deepEqual(JSON.parse(await detail.locator('figure.json pre').innerText()), failed.details);
    assert.match(text, /curl -sS "http:\/\/127\.0\.0\.1:\d+\/api\/v1\/request-logs\/req_\w+"/);
    await checkView(page, 'Request logs', 'request-logs-entry');
    await page.close();
    assert.deepEqual(browser.errors, []);
  });

  test("the views' panels at 375 px: an event with its deliveries, an endpoint's management, its secret shown once", async () => {
    const page = await browser.page(375);
    await server.open(page, live);
    const nav = page.getByRole('navigation', { name: 'Console' });
    await nav.getByRole('link', { name: 'Events' }).click();
    await page.getByLabel('request.created').check();
    await page.getByRole('button', { name: /^Open evt_/ }).first().click();
    await page.getByRole('heading', { level: 3, name: 'Deliveries', exact: true }).waitFor();
    assert.match(await page.locator('.panel').innerText(), /Previous attributes|Object/);
    await checkView(page, 'Events', 'events-detail-375');
    await nav.getByRole('link', { name: 'Webhook endpoints' }).click();
    await page.getByRole('button', { name: /^Manage/ }).first().click();
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    assert.match(await page.locator('.secret pre').innerText(), /^whsec_/);
    await page.getByRole('heading', { level: 3, name: 'Deliveries', exact: true }).waitFor();
    await checkView(page, 'Webhook endpoints', 'webhook-endpoints-manage-375');
    await page.close();
    assert.deepEqual(browser.errors, []);
  });

  test('a sandbox key opens the console in test mode, with its banner on every view', async () => {
    const page = await browser.page(375);
    await server.open(page, sandbox);
    for (const view of VIEWS) {
      await page.goto(`${server.origin}/console/${view.slug}`);
      await page.getByRole('note').filter({ hasText: 'Test mode.' }).waitFor();
      await checkView(page, view.name, `test-mode-${view.slug}-375`);
    }
    await page.getByRole('button', { name: /^Recipients/ }).first().click();
    const recipients = page.getByRole('region', { name: /^Recipients of [0-9a-f-]{36}$/ });
    await recipients.waitFor();
    const text = await recipients.innerText();
    assert.match(text, /ops@example\.com[\s\S]*sent/);
    assert.match(text, /bounce@failed\.test[\s\S]*failed[\s\S]*550/);
    await checkView(page, 'Reports', 'test-mode-report-run-375');
    await page.close();
    assert.deepEqual(browser.errors, []);
  });

  test('the shell and its files keep to the console CSP: no inline script, nothing from another origin', async () => {
    const page = await browser.page();
    const loaded: string[] = [];
    page.on('request', (r) => loaded.push(r.url()));
    await server.open(page, live);
    await page.getByRole('heading', { level: 1, name: 'Request logs' }).waitFor();
    assert.deepEqual(loaded.filter((u) => !u.startsWith(server.origin)), []);
    // uPlot sizes its chart through the CSSOM (el.style), which the CSP allows; a style attribute in markup it would refuse.
    await page.locator('.uplot canvas').first().waitFor();
    const inline = await page.evaluate("[...document.scripts].filter((s) => !s.src).length + [...document.querySelectorAll('[style]')].filter((e) => !e.closest('.uplot')).length");
    assert.equal(inline, 0);
    await page.close();
    assert.deepEqual(browser.errors, []);
  });
});
