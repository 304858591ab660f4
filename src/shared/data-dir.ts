import { chmodSync, mkdirSync } from 'node:fs';
import { chmod, lstat, readdir } from 'node:fs/promises';
import path from 'node:path';

/**
 * $DATA_DIR holds secrets (the credentials key, an outbox of clear passwords), so every process that
 * writes there calls this first: 0600/0700 whatever the umask, and what was left more open is narrowed.
 * The directory itself is 0700 before this returns, so nothing below it is reachable by anyone else;
 * the walk below it (every workbook and database file) runs after, off the start's path: a data
 * directory of many files took seconds of a start (bench/README.md, "Upgrades: restart downtime").
 * The promise settles when the walk is done; it never rejects.
 */
export function protectDataDir(dataDir: string): Promise<void> {
  closeDataDir(dataDir);
  return narrowBelow(dataDir);
}

/** The first half of protectDataDir: the umask and the directory itself, without the walk below it. */
export function closeDataDir(dataDir: string): void {
  // Inherited by the child processes (the database process, the private redis-server).
  process.umask(0o077);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dataDir, 0o700);
}

async function narrowBelow(root: string): Promise<void> {
  const stack = [root];
  while (stack.length > 0) {
    const current = stack.pop()!;
    try {
      const info = await lstat(current);
      if (info.isSymbolicLink()) continue;
      if (info.isDirectory()) {
        if ((info.mode & 0o077) !== 0) await chmod(current, 0o700);
        for (const name of await readdir(current)) stack.push(path.join(current, name));
      } else if ((info.mode & 0o077) !== 0) {
        await chmod(current, info.isSocket() ? 0o700 : 0o600);
      }
    } catch {
      // Gone meanwhile (a workbook removed, a database file rotated): nothing left to narrow.
    }
  }
}
