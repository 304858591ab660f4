import type { Scope } from '../shared/scopes.ts';

/**
 * Who is calling: set by the gate on `res.locals.auth` for every request past authentication.
 * Shared by every request of one cached key row: read-only.
 */
export interface AuthContext {
  readonly keyId: string;
  readonly keyName: string;
  /** `live` for sk_live_ keys, `test` for sk_test_ (sandbox) keys. */
  readonly mode: 'live' | 'test';
  readonly scopes: readonly Scope[];
  readonly brokerId: string;
  readonly brokerName: string;
  readonly brokerApproval: 'automatic' | 'manual';
  /** Made by the console with a console session's cookie, not with the key itself. */
  readonly viaConsole?: true;
}

export const hasScope = (auth: AuthContext, ...scopes: Scope[]): boolean =>
  auth.scopes.includes('admin:full') || scopes.some((s) => auth.scopes.includes(s));
