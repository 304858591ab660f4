// Every write of a service, request or endpoint once, then the feed's mirror against the records
// (every-write.ts, which `npm run mutate:events` runs once per mutant).
import { test } from 'node:test';
import { createTestDatabase } from '../helpers/db.ts';
import { everyWriteOnce } from './every-write.ts';

test('every change of a service, request or endpoint once, a failed one, the CLI\'s import and the demo run twice: the feed\'s mirror equals the records', async () => {
  const db = await createTestDatabase();
  try {
    await everyWriteOnce(db);
  } finally {
    await db.drop();
  }
});
