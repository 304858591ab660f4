import { hasScope, isSandbox } from '../http/auth-context.ts';
import { operation, type DataOf } from '../http/operation.ts';
import type { RegisterRoutes } from '../routes.ts';

/**
 * GET and POST /api/v1/auth-check. The gate has already authenticated the key, checked its IP
 * and rate limit and (for POST: services:write or admin:full) its scopes, from openapi.yaml.
 */
export const registerAuthRoutes: RegisterRoutes = (router, deps) => {
  // A count over all of the broker's rows on every auth-check divided its throughput by 3-4
  // (bench/README.md); it is held like a list page and dropped on every change.
  const serviceCount = (brokerId: string) =>
    deps.serviceReads.read(brokerId, 'count', async () => ({ value: await deps.prisma.service.count({ where: { brokerId } }) }));
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
