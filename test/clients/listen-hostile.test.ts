// `client-api-v1 listen` against a hostile stand-in API (issue 40 item 4): a feed that claims more
// with empty pages, a cursor that does not advance, escape sequences in what the server sends, and
// URLs that would send events or the key off this machine.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { checkOptions, listen, ListenError, newSessionSecret, type ListenOptions } from '../../clients/typescript/src/listen.ts';

type Answer = { status?: number; headers?: Record<string, string>; body: unknown };

const event = (id: string, type = 'ping') => ({ object: 'event', id, type, created_at: '2026-11-27T09:00:01.000Z', mode: 'test', data: { object: { object: 'ping', endpoint_id: 'we_4bK9xT2mQ7vR1nL8pZ3cY6dW' } } });
const page = (data: unknown[], hasMore: boolean) => ({ success: true, data, pagination: { limit: 100, has_more: hasMore, next_starting_after: null } });
const START = 'evt_000000000000000000000000';

let local: Server;
let forwardTo: string;
const posts: string[] = [];

before(async () => {
  local = createServer((req, res) => {
    posts.push(String(req.headers['webhook-id']));
    req.resume().on('end', () => res.writeHead(204).end());
  });
  local.listen(0, '127.0.0.1');
  await once(local, 'listening');
  forwardTo = `http://127.0.0.1:${(local.address() as AddressInfo).port}/hooks`;
});
after(() => local?.close());

/** A stand-in API: auth-check answers `keyName`, the newest event is START, and `feed` answers each ascending poll (the n-th, from 0). */
async function standIn(feed: (n: number, req: IncomingMessage) => Answer, keyName = 'Stand-in'): Promise<{ url: string; polls: () => number; close: () => void }> {
  let polls = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url!, 'http://stand-in');
    const send = ({ status = 200, headers = {}, body }: Answer) => res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
    if (url.pathname === '/api/v1/auth-check') return send({ body: { success: true, data: { key_name: keyName, mode: 'test' } } });
    if (url.searchParams.get('order') !== 'asc') return send({ body: page([event(START)], true) });
    send(feed(polls++, req));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, polls: () => polls, close: () => server.close() };
}

/** A session against `baseUrl` with its printed lines and notes. */
function session(baseUrl: string, more: Partial<ListenOptions> = {}) {
  const printed: string[] = [];
  const notes: string[] = [];
  const stop = new AbortController();
  const done = listen({
    baseUrl, apiKey: 'sk_test_standin', forwardTo, events: [], secret: newSessionSecret(), pollIntervalMs: 1000, signal: stop.signal,
    print: (line) => printed.push(line), note: (line) => notes.push(line), ...more,
  });
  return { done, stop, printed, notes };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('listen() against a hostile API', () => {
  test('empty pages that claim has_more are polled once per interval, not at once', async () => {
    const api = await standIn(() => ({ body: page([], true) }));
    const s = session(api.url);
    try {
      // Over 2 s with a 1 s interval: the start's poll and about two more. A busy loop made ~1,000 a second.
      await pause(2000);
    } finally {
      s.stop.abort();
      api.close();
    }
    await s.done;
    assert.ok(api.polls() >= 1 && api.polls() <= 5, `${api.polls()} polls in 2 s`);
  });

  test('X-RateLimit-Remaining: 0 waits X-RateLimit-Reset, and Retry-After is waited, even while pages are full', async () => {
    let n = 0;
    const limited = await standIn(() => ({ headers: { 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': '30' }, body: page([event(`evt_limited${String(n++).padStart(17, '0')}`)], true) }));
    const after = await standIn(() => ({ headers: { 'Retry-After': '30' }, body: page([event(`evt_retryaft${String(n++).padStart(16, '0')}`)], true) }));
    const sessions = [session(limited.url, { pollIntervalMs: 100 }), session(after.url, { pollIntervalMs: 100 })];
    try {
      await pause(1500);
    } finally {
      for (const s of sessions) s.stop.abort();
      limited.close();
      after.close();
    }
    await Promise.all(sessions.map((s) => s.done));
    assert.equal(limited.polls(), 1, 'one poll, then the 30 s the window has left');
    assert.equal(after.polls(), 1, 'one poll, then the 30 s of Retry-After');
    assert.match(sessions[0]!.notes.join('\n'), /polling again in 30 s/);
  });

  test('a 429 waits at least a second, whatever its Retry-After (0, negative, none)', async () => {
    // Issue 46: a Retry-After of 0 or less was waited as nothing, 313 polls in 6 s.
    const retryAfters: Array<Record<string, string>> = [{ 'Retry-After': '0' }, { 'Retry-After': '-5' }, {}];
    const apis = await Promise.all(retryAfters.map((headers) => {
      const times: number[] = [];
      return standIn(() => {
        times.push(performance.now());
        return { status: 429, headers, body: { success: false, error: { code: 'rate_limit_exceeded', message: 'slow down' } } };
      }).then((api) => ({ ...api, times }));
    }));
    const sessions = apis.map((api) => session(api.url));
    try {
      await pause(2500);
    } finally {
      for (const s of sessions) s.stop.abort();
      for (const api of apis) api.close();
    }
    await Promise.all(sessions.map((s) => s.done));
    for (const [i, api] of apis.entries()) {
      const what = JSON.stringify(retryAfters[i]);
      assert.ok(api.polls() >= 1 && api.polls() <= 3, `${api.polls()} polls in 2.5 s with ${what}`);
      // Timers may fire a millisecond early; anything short of a second is the bug.
      for (let n = 1; n < api.times.length; n++) assert.ok(api.times[n]! - api.times[n - 1]! >= 990, `${what}: ${api.times.join(', ')}`);
      assert.match(sessions[i]!.notes.join('\n'), /the API answered 429; trying again in [1-9]\d* s/, what);
    }
  });

  test('a cursor that does not advance stops it with a clear message, each event forwarded once', async () => {
    posts.length = 0;
    const ids = ['evt_stuckaaaaaaaaaaaaaaaaaaa', 'evt_stuckbbbbbbbbbbbbbbbbbbb'];
    // Whatever starting_after says, the same two events and "more".
    const api = await standIn(() => ({ body: page(ids.map((id) => event(id)), true) }));
    const s = session(api.url);
    try {
      await assert.rejects(s.done, (error: unknown) => error instanceof ListenError && /event feed does not advance: after evt_stuckbbbbbbbbbbbbbbbbbbb it answered only events already read/.test(error.message));
    } finally {
      s.stop.abort();
      api.close();
    }
    assert.deepEqual(posts, ids);
    assert.equal(s.printed.length, 2);
    assert.equal(api.polls(), 2);
  });

  test('escape sequences and line breaks in key_name, event type and id are printed without control characters', async () => {
    posts.length = 0;
    const hostile = { ...event('evt_x\u001b[2J\r\n2026-11-27T09:00:00.000Z  service.created  evt_fake  -> 204'), type: 'ping\u001b]0;pwned\u0007\u009b31m\u202e' };
    const api = await standIn((n) => ({ body: n === 0 ? page([hostile], false) : page([], false) }), 'Laptop\u001b]8;;http://evil.example\u001b\\\nFAKE LINE\u0085');
    const s = session(api.url);
    try {
      for (let i = 0; i < 200 && s.printed.length === 0; i++) await pause(50);
    } finally {
      s.stop.abort();
      api.close();
    }
    await s.done;
    assert.equal(s.printed.length, 1, s.printed.join('|'));
    for (const line of [...s.printed, ...s.notes]) {
      // eslint-disable-next-line no-control-regex -- control characters are what must be absent
      assert.doesNotMatch(line, /[\u0000-\u001f\u007f-\u009f\u202a-\u202e]/, JSON.stringify(line));
    }
    assert.match(s.notes[0]!, /of key "Laptop\?\]8;;http:\/\/evil\.example\?\\\?FAKE LINE\?"/);
    assert.match(s.printed[0]!, / {2}ping\?\]0;pwned\?\?31m\? {2}evt_x\?\[2J\?\?2026/);
  });

  test('an error envelope with escape sequences stops it with a printable message', async () => {
    const api = await standIn(() => ({ status: 400, body: { success: false, error: { code: 'invalid_parameter\u001b[31m', message: 'bad\nFAKE LINE' } } }));
    const s = session(api.url);
    try {
      await assert.rejects(s.done, (error: unknown) => error instanceof ListenError && error.message.includes('400 invalid_parameter?[31m: bad?FAKE LINE'));
    } finally {
      api.close();
    }
  });
});

describe('checkOptions: what leaves this machine', () => {
  const base = { events: [], secret: newSessionSecret() };
  const rows: Array<[what: string, options: { baseUrl: string; forwardTo: string; allowRemoteForward?: boolean; allowInsecureApi?: boolean }, refusal: RegExp | null]> = [
    ['loopback receiver, https API', { baseUrl: 'https://api.example.com', forwardTo: 'http://localhost:4000/hooks' }, null],
    ['127.0.0.2 and [::1] receivers', { baseUrl: 'https://api.example.com', forwardTo: 'http://127.0.0.2:4000/' }, null],
    ['[::1] receiver, loopback http API', { baseUrl: 'http://[::1]:3000', forwardTo: 'http://[::1]:4000/' }, null],
    ['localhost http API', { baseUrl: 'http://localhost:3000', forwardTo: 'http://127.0.0.1:4000/' }, null],
    ['receiver on another machine', { baseUrl: 'https://api.example.com', forwardTo: 'https://hooks.example.com/x' }, /^--forward-to hooks\.example\.com is not this machine .*add --allow-remote-forward/],
    ['receiver on a LAN address', { baseUrl: 'https://api.example.com', forwardTo: 'http://192.168.1.5:4000/' }, /--allow-remote-forward/],
    ['receiver named like localhost', { baseUrl: 'https://api.example.com', forwardTo: 'http://localhost.evil.example/' }, /--allow-remote-forward/],
    ['receiver on another machine, allowed', { baseUrl: 'https://api.example.com', forwardTo: 'https://hooks.example.com/x', allowRemoteForward: true }, null],
    ['http API on another machine', { baseUrl: 'http://api.example.com', forwardTo: 'http://localhost:4000/' }, /^the API URL http:\/\/api\.example\.com is plain http: to another machine, so the key would travel in clear; .*--allow-insecure-api/],
    ['http API on another machine, allowed', { baseUrl: 'http://api.example.com', forwardTo: 'http://localhost:4000/', allowInsecureApi: true }, null],
    ['one flag does not lift the other', { baseUrl: 'http://api.example.com', forwardTo: 'http://10.0.0.2/', allowRemoteForward: true }, /--allow-insecure-api/],
  ];
  for (const [what, options, refusal] of rows) {
    test(`${what}: ${refusal ? 'refused' : 'accepted'}`, () => {
      if (refusal === null) assert.doesNotThrow(() => checkOptions({ ...base, ...options }));
      else assert.throws(() => checkOptions({ ...base, ...options }), (error: unknown) => error instanceof ListenError && refusal.test(error.message));
    });
  }
});
