import type { Redis } from 'ioredis';

/** Whether the request client can be used now: connected, and not stalled (a frozen server keeps its connection open). */
export interface RedisHealth {
  usable(): boolean;
}

/** One PING at a time, looked at every this many ms... */
export const HEALTH_PING_MS = 200;
/**
 * ...and one still unanswered at this many looks marks Redis stalled (within 1 s). Counted in looks,
 * not ms: between two looks the event loop reads its sockets, so a busy process that saw no look for
 * a while does not take a PONG it has not read yet for a stall.
 */
export const HEALTH_STALL_LOOKS = 3;

const healths = new WeakMap<Redis, RedisHealth>();

/**
 * The one stall detector of a client, shared by everything that uses it (rate limit, read cache,
 * failed-authentication counter): a request never waits for a command timeout to learn that Redis
 * is frozen. Marked usable again by the first PONG; stops with the client.
 */
export function redisHealth(redis: Redis, pingMs = HEALTH_PING_MS, stallLooks = HEALTH_STALL_LOOKS): RedisHealth {
  const known = healths.get(redis);
  if (known) return known;
  let stalled = false;
  /** Looks since the unanswered PING was sent (0: none is). */
  let waited = 0;
  const look = (): void => {
    if (redis.status !== 'ready') return;
    if (waited > 0) {
      waited += 1;
      if (waited > stallLooks) stalled = true;
      return;
    }
    waited = 1;
    redis.ping().then(
      () => {
        waited = 0;
        stalled = false;
      },
      () => {
        // A timed-out PING of a frozen server: the next one is sent, and only a PONG ends the stall.
        waited = 0;
      },
    );
  };
  const timer = setInterval(look, pingMs);
  timer.unref();
  redis.once('end', () => clearInterval(timer));
  const health: RedisHealth = { usable: () => !stalled && redis.status === 'ready' };
  healths.set(redis, health);
  return health;
}
