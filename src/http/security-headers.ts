import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet from 'helmet';

/**
 * The security headers of every answer: the set OWASP's REST Security Cheat Sheet names for API
 * responses (no framing, no sniffing, HTTPS only, no referrer, same-origin resources). Headers that
 * only guard HTML documents are left to the one HTML page, /docs.
 */
export const apiSecurityHeaders = helmet({
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  crossOriginOpenerPolicy: false,
  crossOriginResourcePolicy: { policy: 'same-origin' },
  originAgentCluster: false,
  referrerPolicy: { policy: 'no-referrer' },
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xFrameOptions: { action: 'deny' },
  xPermittedCrossDomainPolicies: false,
  // app.disable('x-powered-by') already keeps Express from writing it.
  xPoweredBy: false,
  xXssProtection: false,
});

/**
 * The same headers as name/value pairs, for answers written without Express (requests Node refuses
 * before the app sees them), worked out once from the middleware itself so the two cannot drift.
 * `Cache-Control: no-store` goes with them, as on every /api answer.
 */
export const rawAnswerHeaders: ReadonlyArray<readonly [string, string]> = (() => {
  const headers = new Map<string, string>();
  const res = {
    setHeader: (name: string, value: unknown) => headers.set(name, String(value)),
    removeHeader: (name: string) => headers.delete(name),
    getHeader: (name: string) => headers.get(name),
  } as unknown as ServerResponse;
  apiSecurityHeaders({ headers: {} } as IncomingMessage, res, () => undefined);
  headers.set('Cache-Control', 'no-store');
  return [...headers];
})();
