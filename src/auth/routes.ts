import { hasScope, isSandbox } from '../http/auth-context.ts';
import { operation, type DataOf } from '../http/operation.ts';
import type { RegisterRoutes } from '../routes.ts';
import type { PrismaClient } from '../../generated/prisma/client.ts';
import { DEFAULT_KEY_CACHE_MS } from './gate.ts';

/** Brokers whose count is held before the cache starts over. */
const MAX_CACHED_COUNTS = 10_000;

/**
 * The broker's service count for auth-check, held in process for `cacheMs` per broker, and one
 * query in flight per broker (concurrent requests share it). A count over all of a broker's rows
 * on every auth-check divided its throughput by 3-4 (bench/README.md). The count is informative
 * only (nothing is decided from it), so it may be as stale as the key rows the gate already
 * reuses for DEFAULT_KEY_CACHE_MS: a service created or deleted shows within that time.
 */
function serviceCounter(prisma: PrismaClient, cacheMs: number): (brokerId: string) => Promise<number> {
  const cache = new Map<string, { count: Promise<number>; until: number }>();
  return (brokerId) => {
    const now = Date.now();
    const hit = cache.get(brokerId);
    if (hit && hit.until > now) return hit.count;
    const count = prisma.service.count({ where: { brokerId } });
    if (cache.size >= MAX_CACHED_COUNTS) cache.clear();
    const entry = { count, until: now + cacheMs };
    cache.set(brokerId, entry);
    // A failed count is not kept: the next request asks again.
    count.catch(() => {
      if (cache.get(brokerId) === entry) cache.delete(brokerId);
    });
    return count;
  };
}

/**
 * GET and POST /api/v1/auth-check. The gate has already authenticated the key, checked its IP
 * and rate limit and (for POST: services:write or admin:full) its scopes, from openapi.yaml.
 */
export const registerAuthRoutes: RegisterRoutes = (router, deps) => {
  const serviceCount = serviceCounter(deps.prisma, DEFAULT_KEY_CACHE_MS);
  operation(router, deps.contract, 'getAuthCheck', {
    async handle({ auth }) {
      const data: DataOf<'getAuthCheck', 200> = {
        key_id: auth.keyId,
        key_name: auth.keyName,
        mode: auth.mode,
        scopes: [...auth.scopes],
        broker_id: auth.brokerId,
        broker_name: auth.brokerName,
      };
      // The count is service data: only a key that may read services sees it. A sandbox key
      // sees the one generated row of the sandbox list.
      if (hasScope(auth, 'services:read')) {
        data.service_count = isSandbox(auth)
          ? 1
          : await serviceCount(auth.brokerId);
      }
      return { status: 200, data };
    },
  });

  operation(router, deps.contract, 'postAuthCheck', {
    async handle({ auth }) {
      return {
        status: 200,
        data: { write_access: true as const, key_id: auth.keyId, mode: auth.mode, scopes: [...auth.scopes] },
      };
    },
  });
};
