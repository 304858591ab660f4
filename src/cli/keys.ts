import type { ApiKey, KeyMode } from '../../generated/prisma/client.ts';
import { generateApiKey, isScope, SCOPES, type Scope } from '../auth/keys.ts';
import { isValidIpRule } from '../auth/ip-whitelist.ts';
import { CliError } from './errors.ts';
import { randomId } from '../shared/ids.ts';
import { findBrokerBySlug } from './brokers.ts';
import type { Db } from '../shared/db-errors.ts';
import { InvalidValue, parseIpEntry, parseTimestamp } from './values.ts';

export const DEFAULT_RATE_LIMIT = 120;
export const MAX_RATE_LIMIT = 1_000_000;

export interface CreateKeyInput {
  brokerSlug: string;
  mode: KeyMode;
  /** Scope names; duplicates are dropped. */
  scopes: readonly string[];
  name?: string | undefined;
  /** Addresses and CIDR blocks; a non-empty list makes the key IP-restricted. */
  ipWhitelist?: readonly string[] | undefined;
  /** Restricted even with an empty whitelist (refused from everywhere). */
  restrictIp?: boolean | undefined;
  /** Requests per 60-second window. */
  rateLimit?: number | undefined;
  expiresAt?: Date | undefined;
  /** For tests: the moment `expiresAt` must be after. */
  now?: Date | undefined;
}

export interface CreatedKey {
  id: string;
  /** The whole key: shown once, only its SHA-256 is stored. */
  key: string;
  mode: KeyMode;
  scopes: Scope[];
  prefix: string;
}

export interface KeyListItem {
  id: string;
  name: string;
  mode: KeyMode;
  scopes: string[];
  prefix: string;
  last4: string;
  active: boolean;
  expires_at: string | null;
  last_used_at: string | null;
  ip_restricted: boolean;
  ip_whitelist: string[];
  rate_limit: number;
}

/** `"a, b,,c"` -> `["a","b","c"]`. */
export function splitList(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

export function parseScopes(scopes: readonly string[]): Scope[] {
  if (scopes.length === 0) throw new CliError(`--scopes needs at least one scope (${SCOPES.join(', ')})`);
  const out: Scope[] = [];
  for (const s of scopes) {
    if (!isScope(s)) throw new CliError(`unknown scope "${s}" (valid: ${SCOPES.join(', ')})`);
    if (!out.includes(s)) out.push(s);
  }
  return out;
}

export function parseIpWhitelist(entries: readonly string[]): string[] {
  const out: string[] = [];
  for (const entry of entries) {
    try {
      const canonical = parseIpEntry(entry);
      // The gate's own parser has the last word: store nothing it would not match against.
      if (!isValidIpRule(canonical)) throw new InvalidValue(`${JSON.stringify(entry)} is not an address or CIDR block the gate accepts`);
      if (!out.includes(canonical)) out.push(canonical);
    } catch (e) {
      if (e instanceof InvalidValue) throw new CliError(`--ip-whitelist: ${e.message}`);
      throw e;
    }
  }
  return out;
}

/** `--rate-limit` text -> requests per window; a positive integer. */
export function parseRateLimit(text: string): number {
  const n = /^\s*\d+\s*$/.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_RATE_LIMIT) {
    throw new CliError(`--rate-limit must be a whole number from 1 to ${MAX_RATE_LIMIT}, got ${JSON.stringify(text)}`);
  }
  return n;
}

/** `--expires-at` text -> Date (ISO 8601 date or date-time; without an offset it is UTC). */
export function parseExpiresAt(text: string): Date {
  try {
    return parseTimestamp(text);
  } catch (e) {
    if (e instanceof InvalidValue) throw new CliError(`--expires-at ${e.message}`);
    throw e;
  }
}

/** Issues a key for a broker. The returned `key` is the only time the whole key exists. */
export async function createKey(prisma: Db, input: CreateKeyInput): Promise<CreatedKey> {
  if (input.mode !== 'live' && input.mode !== 'test') {
    throw new CliError(`--mode must be live or test, got ${JSON.stringify(input.mode)}`);
  }
  const scopes = parseScopes(input.scopes);
  const ipWhitelist = parseIpWhitelist(input.ipWhitelist ?? []);
  const rateLimit = input.rateLimit ?? DEFAULT_RATE_LIMIT;
  if (!Number.isInteger(rateLimit) || rateLimit < 1 || rateLimit > MAX_RATE_LIMIT) {
    throw new CliError(`--rate-limit must be a whole number from 1 to ${MAX_RATE_LIMIT}, got ${rateLimit}`);
  }
  if (input.expiresAt !== undefined) {
    if (Number.isNaN(input.expiresAt.getTime())) throw new CliError('--expires-at is not a valid date');
    if (input.expiresAt.getTime() <= (input.now ?? new Date()).getTime()) {
      throw new CliError(`--expires-at must be in the future, got ${input.expiresAt.toISOString()}`);
    }
  }
  const name = input.name?.trim() || `${input.mode} key`;
  if (name.length > 200) throw new CliError('--name must be at most 200 characters');
  const broker = await findBrokerBySlug(prisma, input.brokerSlug);

  const generated = generateApiKey(input.mode);
  const row = await prisma.apiKey.create({
    data: {
      id: randomId('key_'),
      brokerId: broker.id,
      name,
      mode: input.mode,
      keyHash: generated.hash,
      prefix: generated.prefix,
      last4: generated.last4,
      scopes,
      ipRestricted: ipWhitelist.length > 0 || input.restrictIp === true,
      ipWhitelist,
      rateLimit,
      expiresAt: input.expiresAt ?? null,
    },
  });
  return { id: row.id, key: generated.key, mode: row.mode, scopes, prefix: row.prefix };
}

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

export function toKeyListItem(k: ApiKey): KeyListItem {
  return {
    id: k.id,
    name: k.name,
    mode: k.mode,
    scopes: k.scopes,
    prefix: k.prefix,
    last4: k.last4,
    active: k.active,
    expires_at: iso(k.expiresAt),
    last_used_at: iso(k.lastUsedAt),
    ip_restricted: k.ipRestricted,
    ip_whitelist: k.ipWhitelist,
    rate_limit: k.rateLimit,
  };
}

/** Every key of a broker, revoked ones included (active: false), oldest first. */
export async function listKeys(prisma: Db, brokerSlug: string): Promise<{ keys: KeyListItem[] }> {
  const broker = await findBrokerBySlug(prisma, brokerSlug);
  const keys = await prisma.apiKey.findMany({ where: { brokerId: broker.id }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
  return { keys: keys.map(toKeyListItem) };
}

/** Revoking a revoked key succeeds, so a retried revoke is harmless. */
export async function revokeKey(prisma: Db, id: string): Promise<{ id: string; active: false }> {
  const keyId = id?.trim() ?? '';
  if (keyId === '') throw new CliError('keys revoke needs a key ID (see `keys list`)');
  const key = await prisma.apiKey.findUnique({ where: { id: keyId }, select: { id: true, active: true } });
  if (!key) throw new CliError(`unknown key "${keyId}"`);
  if (key.active) {
    await prisma.apiKey.updateMany({ where: { id: keyId, active: true }, data: { active: false, revokedAt: new Date() } });
  }
  return { id: keyId, active: false };
}
