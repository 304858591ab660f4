import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';

/**
 * $DATA_DIR holds secrets (the credentials key, an outbox of clear passwords), so every process that
 * writes there calls this first: 0600/0700 whatever the umask, and what was left more open is narrowed.
 */
export function protectDataDir(dataDir: string): void {
  // Inherited by the child processes (the database process, the private redis-server).
  process.umask(0o077);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  narrow(dataDir);
}

function narrow(root: string): void {
  const stack = [root];
  while (stack.length > 0) {
    const current = stack.pop()!;
    let info;
    try {
      info = lstatSync(current);
    } catch {
      continue; // gone meanwhile
    }
    if (info.isSymbolicLink()) continue;
    if (info.isDirectory()) {
      if ((info.mode & 0o077) !== 0) chmodSync(current, 0o700);
      for (const name of readdirSync(current)) stack.push(path.join(current, name));
    } else if ((info.mode & 0o077) !== 0) {
      chmodSync(current, info.isSocket() ? 0o700 : 0o600);
    }
  }
}
