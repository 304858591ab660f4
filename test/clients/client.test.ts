// The TypeScript client at run time against a scripted fetch (issue 46 item 5): a 304 reached by a
// custom fetch, by middleware or by a header spelled otherwise is the typed NotModified case, never
// a `data` that is not there; a 304 that no type admits is thrown; an error carries its Retry-After.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ClientApiError, createClient, type Middleware } from '../../clients/typescript/src/index.ts';

const ETAG = '"abc"';
const BASE = { baseUrl: 'http://api.invalid', apiKey: 'sk_test_x' };

/** A fetch that records each request and answers 304 to one that sends If-None-Match, else a list of services. */
function conditionalServer() {
  const seen: Request[] = [];
  const fetch = (async (input: Request) => {
    seen.push(input);
    if (input.headers.get('if-none-match') === ETAG) return new Response(null, { status: 304, headers: { ETag: ETAG, 'X-Request-Id': 'req_304' } });
    const body = { success: true, data: [], pagination: { total: 0, limit: 25, offset: 0, has_more: false } };
    return new Response(JSON.stringify(body), { status: 200, headers: { 'Content-Type': 'application/json', ETag: ETAG } });
  }) as typeof globalThis.fetch;
  return { seen, fetch };
}

describe('a 304 however the request was made conditional', () => {
  test('through the client\'s fetch: NotModified, with the 304\'s headers', async () => {
    const server = conditionalServer();
    const api = createClient({
      ...BASE,
      fetch: (input, init) => {
        const request = new Request(input, init);
        request.headers.set('If-None-Match', ETAG);
        return server.fetch(request);
      },
    });
    const r = await api.GET('/api/v1/services');
    assert.equal(r.notModified, true);
    assert.equal(r.status, 304);
    assert.equal(r.data, undefined);
    assert.equal(r.response.headers.get('ETag'), ETAG);
  });

  test('through middleware, which runs after the client\'s own (the key is set) on every call', async () => {
    const server = conditionalServer();
    const addsEtag: Middleware = {
      onRequest({ request }) {
        assert.equal(request.headers.get('Authorization'), 'Bearer sk_test_x');
        request.headers.set('If-None-Match', ETAG);
        return request;
      },
    };
    const api = createClient({ ...BASE, fetch: server.fetch, middleware: [addsEtag] });
    const r = await api.GET('/api/v1/services');
    assert.equal(r.notModified, true);
    assert.equal(server.seen[0]!.headers.get('If-None-Match'), ETAG);
  });

  test('with the header spelled If-None-match: NotModified; a tag that does not match: the 200 and its data', async () => {
    const server = conditionalServer();
    const api = createClient({ ...BASE, fetch: server.fetch });
    const r = await api.GET('/api/v1/services', { headers: { 'If-None-match': ETAG } });
    assert.equal(r.notModified, true);
    const changed = await api.GET('/api/v1/services', { headers: { 'If-None-match': '"other"' } });
    assert.ok(!changed.notModified);
    assert.equal(changed.status, 200);
    assert.equal(changed.data.pagination.total, 0);
  });

  test('a 304 to a call that no type lets be conditional is thrown as not_modified, not answered without data', async () => {
    // Behind the types' back: the global fetch swapped for one that adds the header, before the client is made.
    const server = conditionalServer();
    const original = globalThis.fetch;
    globalThis.fetch = ((input: Request) => {
      const request = new Request(input);
      request.headers.set('If-None-Match', ETAG);
      return server.fetch(request);
    }) as typeof globalThis.fetch;
    try {
      const api = createClient(BASE);
      await assert.rejects(api.GET('/api/v1/services'), (err: unknown) => err instanceof ClientApiError && err.code === 'not_modified' && err.status === 304 && err.requestId === 'req_304');
    } finally {
      globalThis.fetch = original;
    }
    assert.equal(server.seen.length, 1);
  });

  test('the client has no use(), eject() or request(): nothing changes a call after its type is fixed', () => {
    const api = createClient(BASE);
    assert.deepEqual(Object.keys(api).sort(), ['GET', 'POST']);
  });
});

describe('ClientApiError.retryAfter', () => {
  const refused = (headers: Record<string, string>) => (async () =>
    new Response(JSON.stringify({ success: false, error: { code: 'rate_limit_exceeded', message: 'slow down' } }), {
      status: 429,
      headers: { 'Content-Type': 'application/json', ...headers },
    })) as typeof globalThis.fetch;

  for (const [what, headers, expected] of [
    ['seconds', () => ({ 'Retry-After': '7' }), 7],
    // Made when the test runs: a date made when the file loads is seconds old by then on a busy machine.
    ['an HTTP date', () => ({ 'Retry-After': new Date(Date.now() + 120_000).toUTCString() }), 120],
    ['none', () => ({}), undefined],
  ] as const) {
    test(`a Retry-After of ${what} is carried in seconds`, async () => {
      const api = createClient({ ...BASE, fetch: refused(headers()), maxRetries: 0 });
      const err = await api.POST('/api/v1/auth-check').then(() => assert.fail('expected a 429'), (e: unknown) => e);
      assert.ok(err instanceof ClientApiError);
      assert.equal(err.status, 429);
      // An HTTP date has whole seconds: the wait is within a second of the two minutes.
      if (typeof expected === 'number' && what === 'an HTTP date') assert.ok(Math.abs(err.retryAfter! - expected) <= 1, String(err.retryAfter));
      else assert.equal(err.retryAfter, expected);
    });
  }
});
