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

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: { service: 'client-api-v1' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    },
    destination as pino.DestinationStream | undefined,
  );
}

export type { Logger };
