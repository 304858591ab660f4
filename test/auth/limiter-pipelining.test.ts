import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { createKeyRateLimiter } from '../../src/auth/rate-limit.ts';
import { requestRedis, startPrivateRedis, waitUntilReady, type RedisEndpoint } from '../../src/redis.ts';

// redis/ioredis#1931: an auto-pipeline opened before `defineCommand('rlflxIncr')` lacks the command;
// ioredis throws after queueing its callback, and the pipeline's exec then fails outside any promise.
let endpoint: RedisEndpoint;
const uncaught: unknown[] = [];
const record = (err: unknown) => uncaught.push(err);

before(async () => {
  endpoint = await startPrivateRedis();
  process.on('uncaughtException', record);
});
after(async () => {
  process.off('uncaughtException', record);
  await endpoint?.stop();
});

async function client() {
  const redis = requestRedis(endpoint);
  redis.on('error', () => {});
  await waitUntilReady(redis);
  return redis;
}

/** Lets the pipeline's exec answer (and fail, if it is going to). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

test('a new RateLimiterRedis on the request client while a pipeline is in flight counts, and nothing is thrown', async () => {
  const redis = await client();
  try {
    const inFlight = redis.get('something'); // opens this tick's auto-pipeline
    const limiter = new RateLimiterRedis({ storeClient: redis, keyPrefix: 'pipelining', points: 5, duration: 60 });
    const counted = await limiter.consume('k');
    assert.equal(counted.consumedPoints, 1);
    assert.equal(await inFlight, null);
    await settle();
    assert.deepEqual(uncaught, []);
  } finally {
    redis.disconnect();
  }
});

test('the first request of a new limit, in the tick of another command, is counted in Redis', async () => {
  const redis = await client();
  try {
    const limiter = createKeyRateLimiter(redis);
    const inFlight = redis.get('something-else');
    const [state] = await Promise.all([limiter.consume('key_new_limit', 7), inFlight]);
    assert.equal(state.limit, 7);
    assert.equal(state.remaining, 6);
    assert.equal(await redis.get('rl:key:key_new_limit'), '1');
    await settle();
    assert.deepEqual(uncaught, []);
  } finally {
    redis.disconnect();
  }
});
