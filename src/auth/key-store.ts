import type { PrismaClient } from '../../generated/prisma/client.ts';
import type { KeyMode } from './keys.ts';
import { IpWhitelist } from './ip-whitelist.ts';

/** What the gate needs of a key row and its broker. */
export interface StoredKey {
  id: string;
  name: string;
  mode: KeyMode;
  keyHash: string;
  scopes: string[];
  ipRestricted: boolean;
  whitelist: IpWhitelist;
  rateLimit: number;
  active: boolean;
  expiresAt: Date | null;
  revokedAt: Date | null;
  broker: { id: string; name: string; approval: 'automatic' | 'manual' };
}

export interface KeyStore {
  /** The key whose stored hash is `hash`, or undefined. Revocation shows within `cacheMs`. */
  findByHash(hash: string): Promise<StoredKey | undefined>;
  /** The key row for `hash` if it is cached and fresh, without waiting (the gate's fast path). */
  cached(hash: string): StoredKey | undefined;
  /** Forgets cached rows and misses (all, or one hash), e.g. after a change made in this process. */
  invalidate(hash?: string): void;
  /** How many unknown hashes are remembered now (never more than the negative cache's size). */
  readonly unknownCount: number;
}

/** The negative cache: hashes with no key row, remembered briefly so a flood of one costs one look-up. */
export interface NegativeCacheOptions {
  /** How long a miss is remembered (KEY_NEGATIVE_CACHE_MS); 0 turns the negative cache off. */
  ttlMs: number;
  /** How many misses are remembered at most (KEY_NEGATIVE_CACHE_SIZE); the oldest goes first. */
  size: number;
}

/** How many key rows the in-process cache holds before it starts over. */
const MAX_CACHED = 10_000;

async function loadKey(prisma: PrismaClient, hash: string): Promise<StoredKey | undefined> {
  const row = await prisma.apiKey.findUnique({
    where: { keyHash: hash },
    select: {
      id: true,
      name: true,
      mode: true,
      keyHash: true,
      scopes: true,
      ipRestricted: true,
      ipWhitelist: true,
      rateLimit: true,
      active: true,
      expiresAt: true,
      revokedAt: true,
      broker: { select: { id: true, name: true, approval: true } },
    },
  });
  if (!row) return undefined;
  const { ipWhitelist, ...rest } = row;
  return { ...rest, whitelist: new IpWhitelist(ipWhitelist) };
}

/**
 * Hashes that found no row, each until its TTL ends, at most `size` of them. Insertion order is
 * expiry order (one TTL for all), so the first entry is the oldest and is forgotten first.
 */
class UnknownKeys {
  private readonly until = new Map<string, number>();
  readonly on: boolean;

  constructor(private readonly options: NegativeCacheOptions) {
    this.on = options.ttlMs > 0 && options.size > 0;
  }

  get size(): number {
    return this.until.size;
  }

  has(hash: string): boolean {
    const until = this.until.get(hash);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.until.delete(hash);
    return false;
  }

  /** From when the look-up started: a key created meanwhile is not hidden for longer than the TTL. */
  remember(hash: string, started: number): void {
    this.until.delete(hash);
    while (this.until.size >= this.options.size) {
      const oldest = this.until.keys().next().value;
      if (oldest === undefined) break;
      this.until.delete(oldest);
    }
    this.until.set(hash, started + this.options.ttlMs);
  }

  delete(hash: string): void {
    this.until.delete(hash);
  }

  clear(): void {
    this.until.clear();
  }
}

/**
 * Looks keys up by the SHA-256 of the whole key (a unique index). Found rows may be kept in
 * process for `cacheMs` (a couple of seconds by default) to save a database round trip on busy
 * keys; the row's state (active, expiry) is checked on every request, so a revocation made
 * elsewhere (the CLI, another API process) takes effect within `cacheMs`. `cacheMs: 0` turns
 * the cache off.
 *
 * A hash with no row is remembered for `negative.ttlMs`, at most `negative.size` of them (the
 * oldest is forgotten first), so repeating an unknown key costs one look-up per TTL. The TTL is
 * the whole guarantee that a new key is never caught: keys are created by the CLI, possibly in
 * another process and without Redis, so this process cannot be told; a key presented before it
 * existed (it carries ~190 random bits, so only a leaked or chosen secret can be) works at the
 * latest `negative.ttlMs` after it was last looked up and found missing, the same bound a
 * revocation has through `cacheMs`.
 */
export function createKeyStore(
  prisma: PrismaClient,
  cacheMs: number,
  negative: NegativeCacheOptions = { ttlMs: 0, size: 0 },
): KeyStore {
  const cache = new Map<string, { key: StoredKey; until: number }>();
  const unknown = new UnknownKeys(negative);
  const negativeOn = unknown.on;
  const inFlight = new Map<string, Promise<StoredKey | undefined>>();

  const load = (hash: string) => loadKey(prisma, hash);

  function cached(hash: string): StoredKey | undefined {
    if (cacheMs <= 0) return undefined;
    const hit = cache.get(hash);
    return hit && hit.until > Date.now() ? hit.key : undefined;
  }

  return {
    cached,
    get unknownCount() {
      return unknown.size;
    },
    async findByHash(hash) {
      if (negativeOn && unknown.has(hash)) return undefined;
      if (cacheMs <= 0 && !negativeOn) return load(hash);
      const hit = cached(hash);
      if (hit) return hit;
      // Single flight: when a busy key's entry expires, every request of that key misses at
      // once; they share one look-up instead of each running the same query.
      const running = inFlight.get(hash);
      if (running) return running;
      const started = Date.now();
      const lookup = load(hash).then(
        (key) => {
          // Not kept when invalidate() ran meanwhile (the row may predate the change).
          if (inFlight.get(hash) !== lookup) return key;
          inFlight.delete(hash);
          if (key) {
            if (cacheMs > 0) {
              if (cache.size >= MAX_CACHED) cache.clear();
              cache.set(hash, { key, until: started + cacheMs });
            }
          } else {
            cache.delete(hash);
            if (negativeOn) unknown.remember(hash, started);
          }
          return key;
        },
        (err: unknown) => {
          if (inFlight.get(hash) === lookup) inFlight.delete(hash);
          throw err;
        },
      );
      inFlight.set(hash, lookup);
      return lookup;
    },
    invalidate(hash) {
      // A look-up already running may have read the row before the change: drop it too, so
      // the next request reads again.
      if (hash === undefined) {
        cache.clear();
        unknown.clear();
        inFlight.clear();
      } else {
        cache.delete(hash);
        unknown.delete(hash);
        inFlight.delete(hash);
      }
    },
  };
}
