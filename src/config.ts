import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ipaddr from 'ipaddr.js';

/** The three npm start scripts: `npm start` (both halves), `start:api`, `start:worker`. */
export type Role = 'all' | 'api' | 'worker';

/** Every setting in the README's "Configuration" table, read once from the environment. */
export interface Config {
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  /** A real SMTP server (`smtp://`, `smtps://`); undefined: e-mails are written to `outboxDir`. */
  smtpUrl: string | undefined;
  /** Where each e-mail is written as an `.eml` file when there is no SMTP server (SMTP_URL `file:///dir`, or unset: `$DATA_DIR/outbox`). */
  outboxDir: string;
  dataDir: string;
  port: number;
  host: string;
  tlsCertFile: string | undefined;
  tlsKeyFile: string | undefined;
  /** Express `trust proxy` value; `false` means the socket peer is the caller. */
  trustProxy: boolean | number | string;
  mailFrom: string;
  logLevel: string;
  credentialsKey: string | undefined;
  /** How long a report request waits for its e-mail outcomes before answering. */
  reportWaitMs: number;
  /** Attempts per recipient for a transient SMTP failure. */
  mailAttempts: number;
  /** First delay before a transient SMTP failure is tried again; it doubles per attempt (capped at 10 minutes). */
  mailRetryDelayMs: number;
  /** SMTP bounds (RFC 5321 section 4.5.3.2): TCP connect, the server's greeting, and any silence within the conversation. */
  smtpConnectionTimeoutMs: number;
  smtpGreetingTimeoutMs: number;
  smtpSocketTimeoutMs: number;
  /** How often a worker looks for report runs and recipients that have no live job (and on start). */
  reportReconcileMs: number;
  /** On SIGTERM, how long `/readyz` answers 503 while the server still serves, before it stops accepting. */
  shutdownDelayMs: number;
  /** Bound on a server query (DB_STATEMENT_TIMEOUT_MS): PostgreSQL statement_timeout, or the client-side query timeout on the embedded database's socket. A hung database is an error, not a hang. */
  dbStatementTimeoutMs: number;
  /** How long a service list page or count may be reused (SERVICES_CACHE_MS; 0: never). */
  servicesCacheMs: number;
  /** How long an unknown key's hash is remembered (KEY_NEGATIVE_CACHE_MS; 0: never). A key created after it was presented works within this time. */
  keyNegativeCacheMs: number;
  /** How many unknown hashes are remembered at most (KEY_NEGATIVE_CACHE_SIZE). */
  keyNegativeCacheSize: number;
  /** Failed authentications per caller IP and window before 429 (AUTH_FAILURES_PER_IP; 0: no bound, the default). */
  authFailuresPerIp: number;
  /** The window of that bound in seconds (AUTH_FAILURES_WINDOW_SECONDS). */
  authFailuresWindowSeconds: number;
  /** API processes sharing the limits: with Redis unusable each allows a key its limit divided by this (RATE_LIMIT_API_PROCESSES). */
  rateLimitApiProcesses: number;
  /** Live reports of one broker running at once (REPORTS_CONCURRENT_PER_BROKER). */
  reportsConcurrentPerBroker: number;
  /** Live reports one broker may start in any hour (REPORTS_PER_HOUR_PER_BROKER). */
  reportsPerHourPerBroker: number;
  /** Largest workbook attached to a report e-mail (REPORT_ATTACHMENT_MAX_BYTES); a larger one goes out as download links. */
  reportAttachmentMaxBytes: number;
  /** The address people reach this server at (PUBLIC_BASE_URL, no trailing slash): download links start with it. */
  publicBaseUrl: string;
  /** How long a report download link is valid (REPORT_LINK_TTL_HOURS). */
  reportLinkTtlHours: number;
  /** Requests to /downloads/reports per caller IP (IPv6: per /64) and minute (REPORT_DOWNLOADS_PER_IP_PER_MINUTE). */
  reportDownloadsPerIpPerMinute: number;
  /** How long a webhook receiver has to answer an attempt (WEBHOOK_TIMEOUT_MS). */
  webhookTimeoutMs: number;
  /** Seconds before each attempt of a webhook delivery, the first counted from the event (WEBHOOK_RETRY_SCHEDULE). */
  webhookRetrySchedule: RetrySchedule;
  /** An endpoint failing without a success for this long is disabled (WEBHOOK_DISABLE_AFTER_HOURS). */
  webhookDisableAfterHours: number;
  /** Allow http and loopback or private webhook addresses, never the metadata address (WEBHOOK_ALLOW_PRIVATE_URLS; development and tests). */
  webhookAllowPrivateUrls: boolean;
  /** Webhook endpoints one broker may have in each mode, live and test (WEBHOOK_ENDPOINTS_PER_BROKER). */
  webhookEndpointsPerBroker: number;
  /** Validate every response against openapi.yaml (tests and development). */
  validateResponses: boolean;
}

function optional(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function integer(name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  const text = optional(value);
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`${name} must be an integer from ${min} to ${max}, got "${text}"`);
  }
  return n;
}

function flag(name: string, value: string | undefined): boolean {
  const text = optional(value);
  if (text === undefined || text === 'false') return false;
  if (text === 'true') return true;
  throw new Error(`${name} must be true or false, got "${text}"`);
}

/** Express's `trust proxy`: `true`/`false`, a hop count, or names (`loopback`) and CIDRs. Unset: off. */
export function parseTrustProxy(value: string | undefined): boolean | number | string {
  const text = optional(value);
  if (text === undefined || text === 'false') return false;
  if (text === 'true') return true;
  if (/^\d+$/.test(text)) return Number(text);
  return text;
}

/**
 * Whether HOST is an unspecified address (`::`, `0.0.0.0`, `[::]`, `0:0:0:0:0:0:0:0`,
 * `::ffff:0.0.0.0`, …): every interface, and no address a client could be sent to.
 */
export function isUnspecifiedHost(host: string): boolean {
  const bare = host.trim().replace(/^\[(.*)\]$/, '$1');
  if (!ipaddr.isValid(bare)) return false;
  const parsed = ipaddr.parse(bare);
  const address = parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress() ? (parsed as ipaddr.IPv6).toIPv4Address() : parsed;
  return address.toNormalizedString() === (address.kind() === 'ipv4' ? '0.0.0.0' : '0:0:0:0:0:0:0:0');
}

/** Without query or fragment; unset, this server's own `http(s)://HOST:PORT`. */
export function publicBaseUrlOf(env: NodeJS.ProcessEnv, host: string, port: number): string {
  const text = optional(env.PUBLIC_BASE_URL);
  if (text === undefined) {
    const scheme = optional(env.TLS_CERT_FILE) && optional(env.TLS_KEY_FILE) ? 'https' : 'http';
    return `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`PUBLIC_BASE_URL must be an http or https URL, got "${text}"`);
  }
  if (!['http:', 'https:'].includes(url.protocol) || url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new Error(`PUBLIC_BASE_URL must be an http or https URL without credentials, query or fragment, got "${text}"`);
  }
  return url.href.replace(/\/+$/, '');
}

// The webhook retry settings (src/webhooks/schedule.ts applies them).
export type RetrySchedule = readonly number[];

/**
 * The Standard Webhooks spec's example schedule: immediately, then 5 seconds, 5 minutes,
 * 30 minutes, 2 hours, 5 hours, 10 hours and 10 hours (8 attempts over about 27.6 hours).
 */
export const DEFAULT_RETRY_SCHEDULE: RetrySchedule = [0, 5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 10 * 3600];

/** `WEBHOOK_DISABLE_AFTER_HOURS`'s default: 5 days of nothing but failures. */
export const DEFAULT_DISABLE_AFTER_HOURS = 120;

/** A decimal number of seconds: `0`, `5`, `0.5`; no sign, exponent, hex or `Infinity`. */
const SECONDS = /^\d+(\.\d+)?$/;

/**
 * Reads `WEBHOOK_RETRY_SCHEDULE`: comma-separated seconds (`0,5,300`; spaces around the commas
 * allowed), one per attempt. Throws an Error naming the setting and the bad item otherwise.
 */
export function parseRetrySchedule(text: string, name = 'WEBHOOK_RETRY_SCHEDULE'): RetrySchedule {
  if (text.trim() === '') throw new Error(`${name} must list at least one delay in seconds (such as 0,5,300), got "${text}"`);
  return text.split(',').map((item, index) => {
    const seconds = item.trim();
    if (!SECONDS.test(seconds)) {
      throw new Error(`${name} must be a comma-separated list of seconds (non-negative numbers, such as 0,5,300): item ${index + 1} is "${seconds}"`);
    }
    return Number(seconds);
  });
}

/**
 * SMTP_URL: `smtp://` or `smtps://` (nodemailer), or `file:///an/absolute/dir` to write each e-mail
 * there as an `.eml` file, chosen by name. Unset: the outbox under DATA_DIR. The error never
 * repeats the value, which may hold a password.
 */
export function parseSmtpUrl(value: string | undefined, dataDir: string): Pick<Config, 'smtpUrl' | 'outboxDir'> {
  const text = optional(value);
  if (text === undefined) return { smtpUrl: undefined, outboxDir: path.join(dataDir, 'outbox') };
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (url && (url.protocol === 'smtp:' || url.protocol === 'smtps:') && url.hostname !== '') return { smtpUrl: text, outboxDir: path.join(dataDir, 'outbox') };
  if (url?.protocol === 'file:' && (url.hostname === '' || url.hostname === 'localhost') && url.search === '' && url.hash === '') {
    return { smtpUrl: undefined, outboxDir: path.resolve(fileURLToPath(url)) };
  }
  const scheme = url ? `a ${url.protocol} URL` : 'no URL';
  throw new Error(`SMTP_URL must be smtp://user:pass@host:port, smtps://… or file:///an/absolute/directory (e-mails written there as .eml files), got ${scheme}`);
}

/** Where this process's e-mails go, without a password: `smtp://host:port`, or `file:///dir`. */
export function mailTarget(config: Pick<Config, 'smtpUrl' | 'outboxDir'>): string {
  if (!config.smtpUrl) return `file://${config.outboxDir}`;
  const url = new URL(config.smtpUrl);
  return `${url.protocol}//${url.hostname}${url.port ? `:${url.port}` : ''}`;
}

/**
 * The setups that cannot work, refused by name before anything starts (issue 32 rows 7 and 8,
 * issue 40 item 7, issue 45 item 1): defaulted, each would make a process half-work (a Redis or a
 * database of its own, a key of its own under its DATA_DIR, links to an address no one reaches,
 * e-mails to a directory no one reads). Throws an Error of one line naming the setting.
 */
export function checkSetup(role: Role, config: Config, env: NodeJS.ProcessEnv): void {
  const publicBaseUrlSet = optional(env.PUBLIC_BASE_URL) !== undefined;
  // A link to http://[::]:3000 reaches no one: every role writes links (console sign-in, report downloads).
  if (!publicBaseUrlSet && isUnspecifiedHost(config.host)) {
    const links = role === 'api' ? 'the console sign-in links' : role === 'worker' ? 'the report download links' : 'the console sign-in and report download links';
    throw new Error(`HOST=${config.host} listens on every address, none a client can be sent to, so ${links} need PUBLIC_BASE_URL: the address people reach the API at (e.g. https://api.example.com)`);
  }
  if (role === 'all') return;
  if (!config.redisUrl) {
    throw new Error(`npm run start:${role} runs apart from its other half, so both need one shared REDIS_URL`);
  }
  if (!config.databaseUrl) {
    throw new Error(`npm run start:${role} runs apart on the shared REDIS_URL, so it needs DATABASE_URL: the PostgreSQL every process shares (unset, it would use an embedded database of its own, which only npm start may)`);
  }
  if (!config.credentialsKey) {
    throw new Error(`npm run start:${role} runs apart on PostgreSQL, so every process needs one shared CREDENTIALS_KEY (64 hex characters, e.g. \`openssl rand -hex 32\`)`);
  }
  if (role === 'worker' && !publicBaseUrlSet) {
    throw new Error('npm run start:worker writes the report download links, so it needs PUBLIC_BASE_URL: the address people reach the API at');
  }
  if (role === 'worker' && optional(env.SMTP_URL) === undefined) {
    throw new Error('npm run start:worker sends the report e-mails, so it needs SMTP_URL: smtp://user:pass@host:port, or file:///a/directory to write them there as .eml files (only npm start does that unset)');
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const host = optional(env.HOST) ?? '127.0.0.1';
  const port = integer('PORT', env.PORT, 3000, 0, 65535);
  const dataDir = path.resolve(optional(env.DATA_DIR) ?? './var');
  return {
    databaseUrl: optional(env.DATABASE_URL),
    redisUrl: optional(env.REDIS_URL),
    ...parseSmtpUrl(env.SMTP_URL, dataDir),
    dataDir,
    port,
    host,
    tlsCertFile: optional(env.TLS_CERT_FILE),
    tlsKeyFile: optional(env.TLS_KEY_FILE),
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    mailFrom: optional(env.MAIL_FROM) ?? 'reports@localhost',
    logLevel: optional(env.LOG_LEVEL) ?? 'info',
    credentialsKey: optional(env.CREDENTIALS_KEY),
    reportWaitMs: integer('REPORT_WAIT_MS', env.REPORT_WAIT_MS, 20_000, 100, 120_000),
    mailAttempts: integer('MAIL_ATTEMPTS', env.MAIL_ATTEMPTS, 3, 1, 10),
    mailRetryDelayMs: integer('MAIL_RETRY_DELAY_MS', env.MAIL_RETRY_DELAY_MS, 30_000, 10, 3_600_000),
    smtpConnectionTimeoutMs: integer('SMTP_CONNECTION_TIMEOUT_MS', env.SMTP_CONNECTION_TIMEOUT_MS, 120_000, 100, 3_600_000),
    smtpGreetingTimeoutMs: integer('SMTP_GREETING_TIMEOUT_MS', env.SMTP_GREETING_TIMEOUT_MS, 300_000, 100, 3_600_000),
    smtpSocketTimeoutMs: integer('SMTP_SOCKET_TIMEOUT_MS', env.SMTP_SOCKET_TIMEOUT_MS, 600_000, 100, 3_600_000),
    reportReconcileMs: integer('REPORT_RECONCILE_MS', env.REPORT_RECONCILE_MS, 30_000, 100, 3_600_000),
    shutdownDelayMs: integer('SHUTDOWN_DELAY_MS', env.SHUTDOWN_DELAY_MS, 5000, 0, 120_000),
    dbStatementTimeoutMs: integer('DB_STATEMENT_TIMEOUT_MS', env.DB_STATEMENT_TIMEOUT_MS, 30_000, 100, 600_000),
    servicesCacheMs: integer('SERVICES_CACHE_MS', env.SERVICES_CACHE_MS, 2000, 0, 60_000),
    keyNegativeCacheMs: integer('KEY_NEGATIVE_CACHE_MS', env.KEY_NEGATIVE_CACHE_MS, 2000, 0, 60_000),
    keyNegativeCacheSize: integer('KEY_NEGATIVE_CACHE_SIZE', env.KEY_NEGATIVE_CACHE_SIZE, 10_000, 1, 1_000_000),
    authFailuresPerIp: integer('AUTH_FAILURES_PER_IP', env.AUTH_FAILURES_PER_IP, 0, 0, 1_000_000),
    authFailuresWindowSeconds: integer('AUTH_FAILURES_WINDOW_SECONDS', env.AUTH_FAILURES_WINDOW_SECONDS, 60, 1, 86_400),
    rateLimitApiProcesses: integer('RATE_LIMIT_API_PROCESSES', env.RATE_LIMIT_API_PROCESSES, 1, 1, 1000),
    reportsConcurrentPerBroker: integer('REPORTS_CONCURRENT_PER_BROKER', env.REPORTS_CONCURRENT_PER_BROKER, 2, 1, 1000),
    reportsPerHourPerBroker: integer('REPORTS_PER_HOUR_PER_BROKER', env.REPORTS_PER_HOUR_PER_BROKER, 30, 1, 100_000),
    reportAttachmentMaxBytes: integer('REPORT_ATTACHMENT_MAX_BYTES', env.REPORT_ATTACHMENT_MAX_BYTES, 10 * 1024 * 1024, 0, 2 ** 31 - 1),
    publicBaseUrl: publicBaseUrlOf(env, host, port),
    reportLinkTtlHours: integer('REPORT_LINK_TTL_HOURS', env.REPORT_LINK_TTL_HOURS, 168, 1, 8760),
    reportDownloadsPerIpPerMinute: integer('REPORT_DOWNLOADS_PER_IP_PER_MINUTE', env.REPORT_DOWNLOADS_PER_IP_PER_MINUTE, 30, 1, 100_000),
    webhookTimeoutMs: integer('WEBHOOK_TIMEOUT_MS', env.WEBHOOK_TIMEOUT_MS, 15_000, 100, 120_000),
    webhookRetrySchedule: optional(env.WEBHOOK_RETRY_SCHEDULE) === undefined ? DEFAULT_RETRY_SCHEDULE : parseRetrySchedule(env.WEBHOOK_RETRY_SCHEDULE!),
    webhookDisableAfterHours: integer('WEBHOOK_DISABLE_AFTER_HOURS', env.WEBHOOK_DISABLE_AFTER_HOURS, DEFAULT_DISABLE_AFTER_HOURS, 1, 8760),
    webhookAllowPrivateUrls: flag('WEBHOOK_ALLOW_PRIVATE_URLS', env.WEBHOOK_ALLOW_PRIVATE_URLS),
    webhookEndpointsPerBroker: integer('WEBHOOK_ENDPOINTS_PER_BROKER', env.WEBHOOK_ENDPOINTS_PER_BROKER, 16, 1, 100),
    validateResponses: env.VALIDATE_RESPONSES === 'true' || env.NODE_ENV === 'test',
  };
}
