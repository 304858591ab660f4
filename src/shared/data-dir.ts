import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';

/**
 * Everything under $DATA_DIR is the owner's alone: the database files, the credentials key, the
 * outbox (new service passwords in clear) and the report workbooks. Each process that writes there
 * (server, worker, database process, admin CLI) calls this first: files it creates are 0600 and
 * directories 0700 whatever umask it was started with, and what an earlier run or another tool left
 * more open is narrowed.
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
