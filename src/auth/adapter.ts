/** The gate has already checked the key, its IP, rate limit and scopes (openapi.yaml). */
import { hasScope } from '../http/auth-context.ts';
import { operation, type DataOf } from '../http/operation.ts';
import type { Contract } from '../http/contract.ts';
import type { RegisterRoutes } from '../http/resource.ts';
import { authCheckUseCases } from './use-cases.ts';

/** What auth-check is built from. */
type AuthRouteDeps = Parameters<typeof authCheckUseCases>[0] & { contract: Contract };

export const registerAuthRoutes: RegisterRoutes<AuthRouteDeps> = (router, deps) => {
  const authCheck = authCheckUseCases(deps);

  operation(router, deps.contract, 'getAuthCheck', {
    useCases: authCheck,
    async handle(_input, { auth, caller, useCases }) {
      const data: DataOf<'getAuthCheck', 200> = {
        object: 'auth_check',
        key_id: auth.keyId,
        key_name: auth.keyName,
        mode: auth.mode,
        scopes: [...auth.scopes],
        broker_id: auth.brokerId,
        broker_name: auth.brokerName,
      };
      // The count is service data: only a key that may read services sees it.
      if (hasScope(auth, 'services:read')) data.service_count = await useCases.serviceCount(caller);
      return { status: 200, data };
    },
  });

  operation(router, deps.contract, 'postAuthCheck', {
    async handle(_input, { auth }) {
      return {
        status: 200,
        data: { object: 'write_access' as const, write_access: true as const, key_id: auth.keyId, mode: auth.mode, scopes: [...auth.scopes] },
      };
    },
  });
};
