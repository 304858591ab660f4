import { randomBytes } from 'node:crypto';
import type { PrismaClient } from '../../generated/prisma/client.ts';
import { generateApiKey, hashApiKey, type KeyMode, type NewApiKey, type Scope } from '../../src/auth/keys.ts';
import { webhookEndpoint } from './webhook-factories.ts';

/** Small factories for tests: rows inserted with Prisma, returning what a test needs. */

const suffix = (): string => randomBytes(6).toString('hex');

export interface TestBroker {
  id: string;
  slug: string;
  name: string;
  approval: 'automatic' | 'manual';
}

export async function broker(
  prisma: PrismaClient,
  options: { name?: string; slug?: string; email?: string; approval?: 'automatic' | 'manual' } = {},
): Promise<TestBroker> {
  const s = suffix();
  const row = await prisma.broker.create({
    data: {
      id: `brk_${s}`,
      slug: options.slug ?? `broker-${s}`,
      name: options.name ?? `Broker ${s}`,
      email: options.email ?? `ops-${s}@example.com`,
      approval: options.approval ?? 'manual',
    },
  });
  return { id: row.id, slug: row.slug, name: row.name, approval: row.approval };
}

export interface ApiKeyOptions {
  /** The broker the key belongs to; a new one is made when omitted. */
  brokerId?: string;
  name?: string;
  scopes?: Scope[] | string[];
  mode?: KeyMode;
  /** The mode written to the row, when a test needs it to disagree with the key's prefix. */
  storedMode?: KeyMode;
  ipRestricted?: boolean;
  /** A non-empty whitelist makes the key restricted unless `ipRestricted` says otherwise. */
  ipWhitelist?: string[];
  rateLimit?: number;
  expiresAt?: Date | null;
  active?: boolean;
  /** The clear key to store (one a test presented before creating it); a new random one otherwise. */
  key?: string;
}

export interface TestApiKey {
  /** The clear key, as the client sends it. */
  key: string;
  id: string;
  brokerId: string;
  mode: KeyMode;
  scopes: string[];
}

/** What is stored of a chosen clear key, as generateApiKey makes it for a random one. */
function keyParts(key: string): NewApiKey {
  return { key, hash: hashApiKey(key), prefix: key.slice(0, 12), last4: key.slice(-4) };
}

export async function apiKey(prisma: PrismaClient, options: ApiKeyOptions = {}): Promise<TestApiKey> {
  const brokerId = options.brokerId ?? (await broker(prisma)).id;
  const mode = options.mode ?? 'live';
  const generated = options.key === undefined ? generateApiKey(mode) : keyParts(options.key);
  const whitelist = options.ipWhitelist ?? [];
  const active = options.active ?? true;
  const scopes = [...(options.scopes ?? ['admin:full'])];
  const row = await prisma.apiKey.create({
    data: {
      id: `key_${suffix()}`,
      brokerId,
      name: options.name ?? `Test key ${suffix()}`,
      mode: options.storedMode ?? mode,
      keyHash: generated.hash,
      prefix: generated.prefix,
      last4: generated.last4,
      scopes,
      ipRestricted: options.ipRestricted ?? whitelist.length > 0,
      ipWhitelist: whitelist,
      rateLimit: options.rateLimit ?? 120,
      active,
      expiresAt: options.expiresAt ?? null,
      revokedAt: active ? null : new Date(),
    },
  });
  return { key: generated.key, id: row.id, brokerId, mode, scopes };
}

/** A broker with an admin:full key of each mode, as most tests of an operation start. */
export interface BrokerWithKeys {
  brokerId: string;
  live: TestApiKey;
  sandbox: TestApiKey;
}

/** BrokerWithKeys with an enabled webhook endpoint of each mode (their ids). */
export interface BrokerWithEndpoints extends BrokerWithKeys {
  endpoint: string;
  testEndpoint: string;
}

/** A limit the tests that make these keys never reach: they test other things than the limit. */
const UNREACHED_RATE_LIMIT = 100_000;

/** A new broker with a live and a sandbox admin:full key, and with `endpoints`, an enabled webhook endpoint of each mode. */
export function brokerWithKeys(prisma: PrismaClient, options: { endpoints: true }): Promise<BrokerWithEndpoints>;
export function brokerWithKeys(prisma: PrismaClient, options?: { endpoints?: false }): Promise<BrokerWithKeys>;
export async function brokerWithKeys(prisma: PrismaClient, options: { endpoints?: boolean } = {}): Promise<BrokerWithKeys | BrokerWithEndpoints> {
  const { id: brokerId } = await broker(prisma);
  const keys: BrokerWithKeys = {
    brokerId,
    live: await apiKey(prisma, { brokerId, mode: 'live', rateLimit: UNREACHED_RATE_LIMIT }),
    sandbox: await apiKey(prisma, { brokerId, mode: 'test', rateLimit: UNREACHED_RATE_LIMIT }),
  };
  if (!options.endpoints) return keys;
  return {
    ...keys,
    endpoint: await webhookEndpoint(prisma, { brokerId }),
    testEndpoint: await webhookEndpoint(prisma, { brokerId, mode: 'test' }),
  };
}

export interface RequestLogOptions {
  requestId?: string;
  at?: Date;
  method?: string;
  path?: string;
  operation?: string | null;
  status?: number;
  errorCode?: string | null;
  errorMessage?: string | null;
  errorDetails?: { [field: string]: string | number | boolean };
  idempotencyReplayed?: boolean;
  durationMs?: number;
}

/** One API log entry of `key` (as the gate writes it), for tests of reading the logs; returns its request id. */
export async function requestLog(prisma: PrismaClient, key: Pick<TestApiKey, 'id' | 'brokerId' | 'mode'>, options: RequestLogOptions = {}): Promise<string> {
  const requestId = options.requestId ?? `req_${randomBytes(16).toString('hex')}`;
  await prisma.apiLog.create({
    data: {
      at: options.at ?? new Date(),
      apiKeyId: key.id,
      brokerId: key.brokerId,
      mode: key.mode,
      method: options.method ?? 'GET',
      path: options.path ?? '/api/v1/services',
      operation: options.operation === undefined ? 'listServices' : options.operation,
      status: options.status ?? 200,
      errorCode: options.errorCode ?? null,
      errorMessage: options.errorMessage ?? null,
      ...(options.errorDetails !== undefined && { errorDetails: options.errorDetails }),
      idempotencyReplayed: options.idempotencyReplayed ?? false,
      ip: '203.0.113.10',
      durationMs: options.durationMs ?? 3,
      requestId,
    },
  });
  return requestId;
}
