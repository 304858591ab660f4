/**
 * `npm run db:migrate`: applies the pending migrations and exits, the step an upgrade may run
 * before it starts any new process (docs/upgrading.md). The same code path as a starting process
 * (src/db/migrate.ts, under PostgreSQL's advisory lock), on DATABASE_URL, or on the embedded
 * database under DATA_DIR when no server holds it.
 */
import path from 'node:path';
import { openDatabase } from '../src/db/client.ts';
import { describeEngineError, readMigrationsList } from '../src/db/migrate.ts';

const databaseUrl = process.env.DATABASE_URL?.trim() || undefined;
const dataDir = path.resolve(process.env.DATA_DIR?.trim() || 'var');
try {
  const db = await openDatabase({ databaseUrl, dataDir });
  await db.close();
  const total = (await readMigrationsList()).migrationDirectories.length;
  console.log(
    db.appliedMigrations.length === 0
      ? `db:migrate: the database is up to date (${total} migrations)`
      : `db:migrate: applied ${db.appliedMigrations.length} migration(s): ${db.appliedMigrations.join(', ')}`,
  );
} catch (e) {
  console.error(`client-api-v1: db:migrate failed: ${describeEngineError(e)}`);
  process.exitCode = 1;
}
