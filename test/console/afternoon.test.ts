/**
 * Issue 41's integrator's afternoon, in a real browser: a link made by the API opens the console; a
 * failed call's error is read in full in "Request logs"; an endpoint is created to a receiver that
 * fails, its deliveries are watched failing, the receiver is fixed, the endpoint recovered, and the
 * deliveries succeed; a pending request is approved. The used link is refused the second time,
 * another broker's console shows none of the first broker's data, and no browser console error.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import request from 'supertest';
import { apiKey, broker, type TestApiKey } from '../helpers/factories.ts';
import { eventually } from '../helpers/eventually.ts';
import { startReceiver, type Receiver } from '../helpers/webhooks.ts';
import { launch, screenshot, seriousViolations, type Browser } from './browser.ts';
import { startConsoleServer, type ConsoleServer } from './harness.ts';

let server: ConsoleServer;
let receiver: Receiver;
const browsers: Browser[] = [];

before(async () => {
  // One attempt per delivery, so a refused delivery ends failed at once.
  server = await startConsoleServer({ webhookRetrySchedule: [0], webhookAllowPrivateUrls: true });
  receiver = await startReceiver();
});
after(async () => {
  for (const b of browsers) await b.close();
  await receiver?.stop();
  await server?.close();
});

const asKey = (key: TestApiKey) => ({
  post: (url: string, body: object) => request(server.t.app).post(url).set('Authorization', `Bearer ${key.key}`).send(body),
});

/** `at` as a datetime-local field takes it, in the time zone this machine's browser shares. */
const localInput = (at: Date) => {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${at.getFullYear()}-${p(at.getMonth() + 1)}-${p(at.getDate())}T${p(at.getHours())}:${p(at.getMinutes())}:${p(at.getSeconds())}`;
};

/** Presses "Refresh deliveries" until the deliveries' badges are `want` (bounded). */
async function deliveriesBecome(page: Page, want: (statuses: string[]) => boolean, what: string): Promise<string[]> {
  return eventually(async () => {
    await page.getByRole('button', { name: 'Refresh deliveries' }).click();
    await page.waitForLoadState('networkidle');
    const statuses = await page.locator('tr.delivery-row .badge').first().isVisible()
      ? await page.locator('tr.delivery-row td:nth-child(2) .badge').allInnerTexts()
      : [];
    return want(statuses) ? statuses : undefined;
  }, 30_000, what);
}

test("an integrator's afternoon in the console", async () => {
  const shop = await broker(server.t.prisma, { approval: 'manual', name: 'Integrator Shop' });
  const key = await apiKey(server.t.prisma, { brokerId: shop.id, mode: 'live', rateLimit: 100_000 });
  const api = asKey(key);
  const order = await api.post('/api/v1/service-create', { plan: 'Standard VPS', hostname: 'web1.example.com', customer_email: 'ann@example.com' });
  const approved = await api.post(`/api/v1/requests/${order.body.data.request_id}/manage`, { action: 'approve' });
  const refused = await api.post(`/api/v1/services/${approved.body.data.service_number}/upgrade`, { plan: 'Platinum VPS' });
  assert.equal(refused.status, 400, JSON.stringify(refused.body));
  await server.t.flushApiLog();

  const browser = await launch();
  browsers.push(browser);
  const page = await browser.page();
  const link = await server.link(key);
  await page.goto(link);
  await page.waitForURL(`${server.origin}/console/`);

  // The failed call, with its error's message and details in full.
  await page.getByLabel('Status').selectOption('4xx');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.getByRole('row').filter({ hasText: 'upgradeService' }).getByRole('button', { name: /^Details/ }).click();
  const entry = page.locator('.detail');
  assert.match(await entry.innerText(), new RegExp(refused.body.error.message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  assert.deepEqual(JSON.parse(await entry.locator('figure.json pre').innerText()), refused.body.error.details);
  await screenshot(page, 'afternoon-1-failed-call');

  // An endpoint to a receiver that fails; its secret is shown once.
  receiver.answer('shop', () => 503);
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Webhook endpoints' }).click();
  await page.getByLabel('URL').fill(receiver.url('shop'));
  await page.getByRole('button', { name: 'Create endpoint' }).click();
  const secret = page.locator('.secret pre');
  assert.match(await secret.innerText(), /^whsec_/);
  await page.getByRole('button', { name: 'I have kept it' }).click();

  // Events happen (two orders); their deliveries fail.
  for (const host of ['web2.example.com', 'web3.example.com']) {
    const pending = await api.post('/api/v1/service-create', { plan: 'Standard VPS', hostname: host, customer_email: 'ann@example.com' });
    assert.equal(pending.status, 202);
  }
  const failing = await deliveriesBecome(page, (s) => s.length === 2 && s.every((x) => x === 'failed'), 'two failed deliveries');
  assert.equal(failing.length, 2);
  assert.match(await page.locator('tr.delivery-row').first().innerText(), /503/);
  await screenshot(page, 'afternoon-2-deliveries-failed');

  // The receiver is fixed; the endpoint is recovered since an hour ago; the deliveries succeed.
  receiver.answer('shop', () => 200);
  await page.getByLabel('Since').fill(localInput(new Date(Date.now() - 3_600_000)));
  await page.getByRole('button', { name: 'Recover' }).click();
  await page.getByRole('status').filter({ hasText: '2 failed deliveries queued again.' }).waitFor();
  // A recovery owes each failed event again: new deliveries, the failed ones kept with their attempts
  // and marked recovered (the API's superseded_by), so they no longer look failed.
  const recovered = await deliveriesBecome(page, (s) => s.filter((x) => x === 'delivered').length === 2 && !s.includes('failed'), 'the recovered deliveries delivered');
  assert.deepEqual(recovered.sort(), ['delivered', 'delivered', 'failed, recovered', 'failed, recovered']);
  assert.equal(receiver.to('shop').length, 4);
  assert.deepEqual(await seriousViolations(page), []);
  await screenshot(page, 'afternoon-3-deliveries-recovered');

  // A pending request approved.
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Requests' }).click();
  await page.getByRole('button', { name: /^Approve REQ-/ }).first().click();
  await page.getByRole('status').filter({ hasText: ': approved.' }).waitFor();
  assert.equal(await server.t.prisma.serviceRequest.count({ where: { brokerId: shop.id, status: 'pending' } }), 1);
  await screenshot(page, 'afternoon-4-request-approved');

  // The link a second time: refused.
  const again = await browser.page();
  const second = await again.goto(link);
  assert.equal(second?.status(), 401);
  assert.match(await again.locator('h1').innerText(), /does not work/);

  // Another broker's console, in another browser, sees none of the first broker's data.
  const other = await broker(server.t.prisma, { name: 'Someone Else' });
  const otherKey = await apiKey(server.t.prisma, { brokerId: other.id, mode: 'live', rateLimit: 100_000 });
  const stranger = await launch();
  browsers.push(stranger);
  const theirs = await stranger.page();
  await theirs.goto(await server.link(otherKey));
  await theirs.waitForURL(`${server.origin}/console/`);
  const logs = await theirs.locator('main').innerText();
  assert.doesNotMatch(logs, /upgradeService|service-create|webhook-endpoints|Integrator Shop/);
  for (const [view, empty] of [['Webhook endpoints', 'No endpoints yet.'], ['Requests', 'No requests match.'], ['Events', 'No events.'], ['Services', 'No services match.']]) {
    await theirs.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: view }).click();
    await theirs.getByText(empty!, { exact: true }).waitFor();
  }
  // Chromium logs the refused link's 401 as a failed load: that refusal is the one error expected.
  assert.deepEqual(browser.errors, [`${link}: Failed to load resource: the server responded with a status of 401 (Unauthorized)`]);
  assert.deepEqual(stranger.errors, []);
});
