/** The permission scopes a key can hold (openapi.yaml, "Scopes"); `admin:full` implies every other. */
export const SCOPES = [
  'services:read',
  'services:write',
  'requests:read',
  'requests:write',
  'reports:generate',
  'admin:full',
] as const;
export type Scope = (typeof SCOPES)[number];

export const isScope = (value: string): value is Scope => (SCOPES as readonly string[]).includes(value);
