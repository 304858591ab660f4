/**
 * Service passwords at rest: AES-256-GCM, stored as `v1:<iv>:<tag>:<ciphertext>` (base64 parts).
 * Losing `$DATA_DIR/credentials.key` makes them unreadable: back it up, or set CREDENTIALS_KEY.
 * The database records the key's fingerprint, so a process with another key refuses to start.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ReadClient } from '../shared/db-errors.ts';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;
export const KEY_FILE_NAME = 'credentials.key';

export class CredentialsKeyError extends Error {
  override name = 'CredentialsKeyError';
}

export class CredentialsDecryptError extends Error {
  override name = 'CredentialsDecryptError';
}

/** Parses a 32-byte key written as 64 hex characters or as base64; throws on anything else. */
export function parseCredentialsKey(text: string, source = 'CREDENTIALS_KEY'): Buffer {
  const value = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(value)) return Buffer.from(value, 'hex');
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(value)) {
    const bytes = Buffer.from(value.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (bytes.length === 32) return bytes;
  }
  throw new CredentialsKeyError(
    `${source} must be 32 bytes written as 64 hex characters or as base64 (e.g. \`openssl rand -hex 32\`)`,
  );
}

export interface LoadKeyOptions {
  /** Value of CREDENTIALS_KEY (undefined or blank: use the key file). */
  envKey?: string | undefined;
  /** $DATA_DIR; the key file lives at `$DATA_DIR/credentials.key`. */
  dataDir: string;
}

/** CREDENTIALS_KEY if set, else `$DATA_DIR/credentials.key`, generated (mode 0600) the first time. */
export async function loadCredentialsKey({ envKey, dataDir }: LoadKeyOptions): Promise<Buffer> {
  if (envKey !== undefined && envKey.trim() !== '') return parseCredentialsKey(envKey);
  const file = path.join(dataDir, KEY_FILE_NAME);
  try {
    return parseCredentialsKey(await readFile(file, 'utf8'), file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  await mkdir(dataDir, { recursive: true });
  const key = randomBytes(32);
  try {
    // 'wx': never overwrite a key another process wrote a moment ago.
    await writeFile(file, key.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    await chmod(file, 0o600); // the umask may have narrowed, never widened, but be explicit
    return key;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') {
      return parseCredentialsKey(await readFile(file, 'utf8'), file);
    }
    throw e;
  }
}

export interface Credentials {
  encrypt(plaintext: string): string;
  decrypt(stored: string): string;
}

/** Encrypt/decrypt with a given 32-byte key. */
export function createCredentials(key: Buffer): Credentials {
  if (key.length !== 32) throw new CredentialsKeyError('credentials key must be 32 bytes');
  return {
    encrypt(plaintext: string): string {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      const tag = cipher.getAuthTag();
      return [VERSION, iv.toString('base64'), tag.toString('base64'), data.toString('base64')].join(':');
    },
    decrypt(stored: string): string {
      const parts = stored.split(':');
      if (parts.length !== 4 || parts[0] !== VERSION) {
        throw new CredentialsDecryptError('stored credential is not in the v1 format');
      }
      const iv = Buffer.from(parts[1]!, 'base64');
      const tag = Buffer.from(parts[2]!, 'base64');
      const data = Buffer.from(parts[3]!, 'base64');
      if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) {
        throw new CredentialsDecryptError('stored credential is malformed');
      }
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
        decipher.setAuthTag(tag);
        return Buffer.concat([decipher.update(data), decipher.final()]).toString('utf8');
      } catch {
        throw new CredentialsDecryptError('stored credential could not be decrypted (wrong key or tampered)');
      }
    },
  };
}

/** Convenience: load the key (env or key file) and return encrypt/decrypt bound to it. */
export async function openCredentials(options: LoadKeyOptions): Promise<Credentials> {
  return createCredentials(await loadCredentialsKey(options));
}

/** The text whose HMAC under the key is its fingerprint: a keyed MAC, so it helps no brute force of the key. */
const FINGERPRINT_TEXT = 'capi credentials key fingerprint';

/** HMAC-SHA256(key, FINGERPRINT_TEXT) in hex: identifies a key without revealing it. */
export function keyFingerprint(key: Buffer): string {
  return createHmac('sha256', key).update(FINGERPRINT_TEXT, 'utf8').digest('hex');
}

/** Where the key came from, for the refusal's message: the setting, or the key file when it is unset. */
const sourceOf = (envKey: string | undefined, dataDir: string) =>
  envKey !== undefined && envKey.trim() !== '' ? 'CREDENTIALS_KEY' : `the key file ${path.join(dataDir, KEY_FILE_NAME)} (CREDENTIALS_KEY unset)`;

/**
 * One credential already stored (a service password, a webhook secret), if any: on a database
 * from before fingerprints, the first key recorded must be the one those were encrypted with.
 */
async function storedSample(prisma: ReadClient): Promise<string | undefined> {
  const service = await prisma.service.findFirst({ select: { passwordEnc: true }, orderBy: { id: 'desc' } });
  if (service) return service.passwordEnc;
  return (await prisma.webhookEndpoint.findFirst({ select: { secret: true }, orderBy: { createdAt: 'desc' } }))?.secret;
}

/**
 * Checks the key against the fingerprint the database recorded, recording it first when there is
 * none (the first process on a database). Throws CredentialsKeyError, naming CREDENTIALS_KEY,
 * when they differ: such a process could neither read nor write what the others do.
 */
export async function checkCredentialsKey(prisma: ReadClient, key: Buffer, options: LoadKeyOptions): Promise<'recorded' | 'matched'> {
  const source = sourceOf(options.envKey, options.dataDir);
  const fingerprint = keyFingerprint(key);
  let recorded = await prisma.credentialsKeyFingerprint.findUnique({ where: { id: 1 } });
  let outcome: 'recorded' | 'matched' = 'matched';
  if (!recorded) {
    const sample = await storedSample(prisma);
    if (sample !== undefined) {
      try {
        createCredentials(key).decrypt(sample);
      } catch {
        throw new CredentialsKeyError(
          `${source} does not decrypt the credentials already stored in this database: set CREDENTIALS_KEY to the key they were encrypted with`,
        );
      }
    }
    // Two first processes at once: one row is written, and the other compares against it.
    const written = await prisma.credentialsKeyFingerprint.createMany({ data: [{ id: 1, fingerprint }], skipDuplicates: true });
    if (written.count === 1) outcome = 'recorded';
    recorded = await prisma.credentialsKeyFingerprint.findUniqueOrThrow({ where: { id: 1 } });
  }
  if (recorded.fingerprint !== fingerprint) {
    throw new CredentialsKeyError(
      `${source} is not the credentials key this database recorded at its first start: every process on one database needs the same CREDENTIALS_KEY`,
    );
  }
  return outcome;
}
