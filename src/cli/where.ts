/**
 * The line every CLI command that opens the database writes on stderr (never on stdout, so
 * `--json` stays one object): which database it used and whether it reached a running server's
 * embedded database through that server. A CLI on another DATA_DIR than the server's would
 * otherwise write keys the server never sees, without a word.
 */
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
