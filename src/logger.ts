import { pino, type Logger } from 'pino';

/** Anything that could hold a key never reaches a log line. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'key',
  'apiKey',
  '*.key',
  '*.password',
  'password',
  'credentials',
];

/**
 * pino's isoTime, made once per millisecond rather than once per line: under load many lines share
 * a millisecond, and formatting the date was a visible part of each request line's cost.
 */
function isoTime(): () => string {
  let lastMs = Number.NaN;
  let last = '';
  return () => {
    const now = Date.now();
    if (now !== lastMs) {
      lastMs = now;
      last = `,"time":"${new Date(now).toISOString()}"`;
    }
    return last;
  };
}

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: { service: 'client-api-v1' },
      timestamp: isoTime(),
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    },
    destination as pino.DestinationStream | undefined,
  );
}

export type { Logger };
