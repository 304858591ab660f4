// The TypeScript client retries `503 service_unavailable` as it retries `429` (issue 45 item 2):
// after the answer's Retry-After, with the same Idempotency-Key, up to maxRetries; a Retry-After
// past maxRetryDelayMs is not waited for, and the 503 is thrown with the contract's code.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ClientApiError, createClient } from '../../clients/typescript/src/index.ts';
import { ok, scripted } from '../helpers/scripted-fetch.ts';

const unavailable = (retryAfter: string) => () =>
  new Response(
    JSON.stringify({ success: false, error: { code: 'service_unavailable', message: 'The service is temporarily unavailable; retry after 2 seconds', request_id: 'req_503' } }),
    { status: 503, headers: { 'Content-Type': 'application/json', 'Retry-After': retryAfter } },
  );

describe('503 service_unavailable in the TypeScript client', () => {
  test('a POST is retried after Retry-After with the same Idempotency-Key until it is answered', async () => {
    const { seen, fetch } = scripted([unavailable('0'), unavailable('0'), ok]);
    const api = createClient({ baseUrl: 'http://api.invalid', apiKey: 'sk_test_x', fetch });
    const { data } = await api.POST('/api/v1/auth-check');
    assert.equal(data?.data.write_access, true);
    assert.equal(seen.length, 3);
    assert.equal(new Set(seen.map((r) => r.headers.get('Idempotency-Key'))).size, 1);
  });

  test('a GET is retried too', async () => {
    const { seen, fetch } = scripted([unavailable('0'), ok]);
    const api = createClient({ baseUrl: 'http://api.invalid', apiKey: 'sk_test_x', fetch });
    await api.GET('/api/v1/auth-check');
    assert.equal(seen.length, 2);
  });

  test('past maxRetries, or a Retry-After past maxRetryDelayMs, the 503 is thrown with its code', async () => {
    const exhausted = scripted([unavailable('0'), unavailable('0'), unavailable('0'), ok]);
    const once = createClient({ baseUrl: 'http://api.invalid', apiKey: 'sk_test_x', fetch: exhausted.fetch, maxRetries: 2 });
    await assert.rejects(once.POST('/api/v1/auth-check'), (err: unknown) =>
      err instanceof ClientApiError && err.status === 503 && err.code === 'service_unavailable' && err.requestId === 'req_503');
    assert.equal(exhausted.seen.length, 3);

    const long = scripted([unavailable('120'), ok]);
    const api = createClient({ baseUrl: 'http://api.invalid', apiKey: 'sk_test_x', fetch: long.fetch, maxRetryDelayMs: 1000 });
    await assert.rejects(api.POST('/api/v1/auth-check'), (err: unknown) => err instanceof ClientApiError && err.status === 503 && err.code === 'service_unavailable');
    assert.equal(long.seen.length, 1);
  });
});
