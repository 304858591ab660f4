// `client-api-v1 listen` (issue 34 item 3) as a developer runs it: the client packed by `npm pack`,
// installed into an empty folder, `npx client-api-v1 listen` against a real server, and a local
// receiver that verifies each POST with the `standardwebhooks` package and the secret the command
// printed. Only events made after it started arrive, only the types asked for, each with the body of
// a real delivery.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import request from 'supertest';
import { listen, newSessionSecret } from '../../clients/typescript/src/listen.ts';
import { eventBody } from '../../src/webhooks/dispatcher.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { runFile } from '../helpers/run-file.ts';

const CLIENT_DIR = fileURLToPath(new URL('../../clients/typescript/', import.meta.url));
/** Generous: the machine may be loaded; a passing run waits only as long as the event takes. */
const DEADLINE_MS = 60_000;

interface Received {
  body: string;
  headers: IncomingHttpHeaders;
}

let t: TestApp;
let server: Server;
let baseUrl: string;
let key: string;
let dir: string;
let env: NodeJS.ProcessEnv;
let receiver: Server;
let hooksUrl: string;
const received: Received[] = [];

const run = (file: string, args: string[], extraEnv: NodeJS.ProcessEnv = {}) => runFile(file, args, { cwd: dir, env: { ...env, ...extraEnv }, timeoutMs: 120_000 });

/** Polls `check` until it returns a value, or fails after DEADLINE_MS with `what`. */
async function waitFor<T>(what: string, check: () => T | undefined, output: () => string = () => ''): Promise<T> {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`no ${what} within ${DEADLINE_MS} ms\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

before(async () => {
  t = await createTestApp({}, { workers: false });
  server = t.app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const brokerId = (await broker(t.prisma, { approval: 'automatic' })).id;
  key = (await apiKey(t.prisma, { brokerId, mode: 'live', scopes: ['admin:full'], rateLimit: 1000 })).key;
  dir = mkdtempSync(path.join(os.tmpdir(), 'capi-listen-'));
  // Nothing of this repository's environment: its own npm cache, no tsx loader.
  env = { PATH: process.env.PATH, HOME: dir, npm_config_cache: path.join(dir, '.npm'), CAPI_URL: baseUrl, CAPI_KEY: key };
  const packed = await runFile('npm', ['pack', '--json', '--pack-destination', dir], { cwd: CLIENT_DIR, env, timeoutMs: 120_000 });
  assert.equal(packed.code, 0, packed.stdout + packed.stderr);
  const tarball = path.join(dir, (JSON.parse(packed.stdout) as Array<{ filename: string }>)[0]!.filename);
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'receiver', private: true, type: 'module' }));
  const installed = await run('npm', ['install', '--no-audit', '--no-fund', '--offline', tarball]);
  assert.equal(installed.code, 0, installed.stdout + installed.stderr);

  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers });
      res.writeHead(204).end();
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  hooksUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
});
after(async () => {
  server?.close();
  receiver?.close();
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A service made through the API (an automatic approval): a service.created and a request.created event. */
async function createService(hostname: string): Promise<number> {
  const res = await request(t.app)
    .post('/api/v1/service-create')
    .set('Authorization', `Bearer ${key}`)
    .send({ plan: 'Basic VPS', hostname, customer_email: 'dev@example.com' });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return (res.body as { data: { service_number: number } }).data.service_number;
}

/** `npx client-api-v1 listen …` in the install folder, its output collected as it comes. */
function startListen(args: string[]): { child: ChildProcess; stdout: () => string; stderr: () => string; output: () => string } {
  // A process group of its own, as a terminal's foreground job: Ctrl-C signals npx and the command alike.
  const child = spawn('npx', ['--offline', 'client-api-v1', 'listen', ...args], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  return { child, stdout: () => out, stderr: () => err, output: () => `stdout:\n${out}\nstderr:\n${err}` };
}

describe('npx client-api-v1 listen, installed from the packed client', () => {
  test('forwards what happens after it starts, signed with the printed secret, only the types asked for', async (ctx) => {
    const before = await createService('before-listen.example.com');
    const listen = startListen(['--forward-to', hooksUrl, '--events', 'service.*']);
    try {
      const secret = await waitFor('secret', () => /^Webhook signing secret of this session: (whsec_\S+)\n/.exec(listen.stdout())?.[1], listen.output);
      await waitFor('ready line', () => (listen.stderr().includes('Forwarding the live events (service.*)') ? true : undefined), listen.output);

      const first = await createService('first.example.com');
      const committed = Date.now();
      const objectOf = (r: Received) => JSON.parse(r.body) as { id: string; type: string; data: { object: { service_number?: number } } };
      await waitFor('delivery of the first service', () => received.find((r) => objectOf(r).data.object.service_number === first), listen.output);
      // A figure for the reader (issue 34 asks for under 3 s), not an assertion: the machine may be loaded.
      ctx.diagnostic(`the first event reached the receiver ${Date.now() - committed} ms after the API answered`);
      const second = await createService('second.example.com');
      await waitFor('delivery of the second service', () => received.find((r) => objectOf(r).data.object.service_number === second), listen.output);

      const webhook = new Webhook(secret);
      const events = received.map((r) => webhook.verify(r.body, r.headers as Record<string, string>) as { id: string; type: string; data: { object: { service_number: number } } });
      assert.deepEqual(events.map((e) => [e.type, e.data.object.service_number]), [['service.created', first], ['service.created', second]],
        'the two new services, in order: not the one made before listen started, no request.* event');
      const stored = await t.prisma.event.findMany({ where: { id: { in: events.map((e) => e.id) } }, orderBy: { seq: 'asc' } });
      assert.deepEqual(received.map((r) => r.body), stored.map((row) => eventBody(row)), 'the body of a real delivery, byte for byte');
      assert.deepEqual(received.map((r) => r.headers['webhook-id']), stored.map((row) => row.id));
      const requestEvents = await t.prisma.event.count({ where: { type: 'request.created', seq: { gt: stored[0]!.seq } } });
      assert.ok(requestEvents >= 1, 'a request.created event came between them and was filtered out');
      // Each line is printed once the receiver has answered, a moment after it got the POST.
      for (const event of events) await waitFor(`line of ${event.id}`, () => (listen.stdout().includes(`  ${event.type}  ${event.id}  -> 204\n`) ? true : undefined), listen.output);
      assert.ok(!received.some((r) => objectOf(r).data.object.service_number === before));

      // npm exits by the signal itself; the command stops cleanly, and `close` (every holder of
      // the output pipes gone) shows it has ended.
      const closed = once(listen.child, 'close');
      process.kill(-listen.child.pid!, 'SIGTERM');
      await closed;
      assert.match(listen.stderr(), /SIGTERM: stopping\nStopped: 2 event\(s\) forwarded, the feed read up to evt_\w+\.\n$/);
      assert.ok(!listen.stdout().includes(key) && !listen.stderr().includes(key), 'the key is never printed');
    } finally {
      try {
        process.kill(-listen.child.pid!, 'SIGKILL');
      } catch {
        // Already ended.
      }
    }
  });

  test('a key the API refuses stops it with what to do, without printing the key', async () => {
    const wrong = `sk_live_${'x'.repeat(40)}`;
    const result = await run('npx', ['--offline', 'client-api-v1', 'listen', '--forward-to', hooksUrl], { CAPI_KEY: wrong });
    assert.equal(result.code, 1, result.stdout + result.stderr);
    assert.match(result.stderr, /the API refused the key \(401 authentication_failed: .+\); set CAPI_KEY or --api-key/);
    assert.ok(!result.stdout.includes(wrong) && !result.stderr.includes(wrong));
  });

  test('a pattern of --events that matches no event type is refused before anything is printed', async () => {
    const result = await run('npx', ['--offline', 'client-api-v1', 'listen', '--forward-to', hooksUrl, '--events', 'services.*']);
    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /--events services\.\* matches no event type/);
  });
});

describe('listen() against a stand-in API: waits, retries and failed local posts', () => {
  const oldEvent = 'evt_000000000000000000000000';
  const ping = { object: 'event', id: 'evt_aaaaaaaaaaaaaaaaaaaaaaaa', type: 'ping', created_at: '2026-11-27T09:00:01.000Z', mode: 'test', data: { object: { object: 'ping', endpoint_id: 'we_4bK9xT2mQ7vR1nL8pZ3cY6dW' } } };
  const created = { ...ping, id: 'evt_bbbbbbbbbbbbbbbbbbbbbbbb', type: 'service.created', data: { object: { service_number: 482913570 } } };

  test('a 429 waits its Retry-After, a 503 a growing delay; each event is posted once and its answer printed, a 500 included', async () => {
    const asked: string[] = [];
    // The feed's answers in turn: too many requests, unavailable, two events, then nothing new.
    const feed: Array<{ status: number; headers: Record<string, string>; body: unknown }> = [
      { status: 429, headers: { 'Retry-After': '1' }, body: { success: false, error: { code: 'rate_limit_exceeded', message: 'slow down' } } },
      { status: 503, headers: {}, body: { success: false, error: { code: 'service_unavailable', message: 'busy' } } },
      { status: 200, headers: {}, body: { success: true, data: [ping, created], pagination: { limit: 100, has_more: false, next_starting_after: created.id } } },
    ];
    const api = createServer((req, res) => {
      const url = new URL(req.url!, 'http://stand-in');
      asked.push(`${req.headers.authorization} ${url.pathname}${url.search}`);
      const send = (status: number, body: unknown, headers: Record<string, string> = {}) => res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
      if (url.pathname === '/api/v1/auth-check') return send(200, { success: true, data: { key_name: 'Stand-in', mode: 'test' } });
      if (url.searchParams.get('order') !== 'asc') return send(200, { success: true, data: [{ ...ping, id: oldEvent }], pagination: { limit: 1, has_more: true, next_starting_after: oldEvent } });
      const next = feed.shift() ?? { status: 200, headers: {}, body: { success: true, data: [], pagination: { limit: 100, has_more: false, next_starting_after: null } } };
      send(next.status, next.body, next.headers);
    });
    const posts: Received[] = [];
    const local = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        posts.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(posts.length === 1 ? 500 : 204).end();
      });
    });
    for (const s of [api, local]) {
      s.listen(0, '127.0.0.1');
      await once(s, 'listening');
    }
    const printed: string[] = [];
    const notes: string[] = [];
    const stop = new AbortController();
    const secret = newSessionSecret();
    try {
      const session = listen({
        baseUrl: `http://127.0.0.1:${(api.address() as AddressInfo).port}`,
        apiKey: 'sk_test_standin',
        forwardTo: `http://127.0.0.1:${(local.address() as AddressInfo).port}/hooks`,
        events: [],
        secret,
        pollIntervalMs: 100,
        signal: stop.signal,
        print: (line) => printed.push(line),
        note: (line) => notes.push(line),
      });
      await waitFor('two posts and an empty poll after them', () => (posts.length === 2 && feed.length === 0 && asked.length >= 6 ? true : undefined), () => notes.join('\n'));
      stop.abort();
      assert.deepEqual(await session, { forwarded: 2, lastEventId: created.id });
    } finally {
      api.close();
      local.close();
    }
    assert.deepEqual(notes.slice(1, 3), ['the API answered 429; trying again in 1 s', 'the API answered 503; trying again in 2 s']);
    assert.deepEqual(printed.map((line) => line.split('  ').slice(1).join('  ')), [`ping  ${ping.id}  -> 500`, `service.created  ${created.id}  -> 204`]);
    assert.deepEqual(posts.map((p) => p.headers['webhook-id']), [ping.id, created.id], 'a 500 is not posted again');
    const webhook = new Webhook(secret);
    assert.deepEqual(posts.map((p) => webhook.verify(p.body, p.headers as Record<string, string>)), [ping, created]);
    assert.ok(asked.every((line) => line.startsWith('Bearer sk_test_standin ')));
    assert.deepEqual(asked.slice(0, 5).map((line) => line.split(' ')[2]), [
      '/api/v1/auth-check',
      '/api/v1/events?limit=1',
      `/api/v1/events?order=asc&limit=100&starting_after=${oldEvent}`,
      `/api/v1/events?order=asc&limit=100&starting_after=${oldEvent}`,
      `/api/v1/events?order=asc&limit=100&starting_after=${oldEvent}`,
    ]);
    assert.equal(asked[5]!.split(' ')[2], `/api/v1/events?order=asc&limit=100&starting_after=${created.id}`);
  });
});
