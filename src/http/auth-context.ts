import type { Scope } from '../auth/keys.ts';

/** Who is calling: set by the gate on `res.locals.auth` for every request past authentication. */
export interface AuthContext {
  keyId: string;
  keyName: string;
  /** `live` for sk_live_ keys, `test` for sk_test_ (sandbox) keys. */
  mode: 'live' | 'test';
  scopes: Scope[];
  brokerId: string;
  brokerName: string;
  brokerApproval: 'automatic' | 'manual';
}

export const isSandbox = (auth: AuthContext): boolean => auth.mode === 'test';

export const hasScope = (auth: AuthContext, ...scopes: Scope[]): boolean =>
  auth.scopes.includes('admin:full') || scopes.some((s) => auth.scopes.includes(s));
