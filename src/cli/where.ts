/** Which database the CLI opened: on another DATA_DIR than the server's it would write keys the server never sees. */
import path from 'node:path';
import type { Database } from '../db/client.ts';

/** The URL without its password. */
function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(DATABASE_URL)';
  }
}

export function databaseLine(database: Pick<Database, 'kind' | 'via' | 'databaseUrl'>, dataDir: string): string {
  if (database.kind === 'postgres') return `database: PostgreSQL ${withoutPassword(database.databaseUrl ?? '')} (DATABASE_URL)`;
  const dir = path.resolve(dataDir, 'db');
  return database.via === 'socket'
    ? `database: embedded PGlite in ${dir}, through the running server on DATA_DIR ${path.resolve(dataDir)}`
    : `database: embedded PGlite in ${dir}, opened by this command: no server is running on DATA_DIR ${path.resolve(dataDir)}`;
}
