import type { KeyMode } from './keys.ts';
import { IpWhitelist } from './ip-whitelist.ts';
import type { ReadClient } from '../shared/db-errors.ts';

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

async function loadKey(prisma: ReadClient, hash: string): Promise<StoredKey | undefined> {
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

/** One TTL for all, so insertion order is expiry order: the first entry is forgotten first. */
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
 * Keys are made and revoked by the CLI, maybe in another process and without Redis, so this process
 * cannot be told: the TTLs are the whole bound. A revocation takes effect within `cacheMs`; a key
 * presented before it existed (only a leaked or chosen secret can be) works within `negative.ttlMs`.
 */
export function createKeyStore(
  prisma: ReadClient,
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
      // Single flight: when a busy key's entry expires, all its requests miss at once.
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
      // A look-up already running may have read the row before the change.
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
