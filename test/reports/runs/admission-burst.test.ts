// Report admissions under a burst (issue 45 item 3), on PostgreSQL, where the broker's admission lock
// is a real lock between connections: an admission never waits on the lock inside its transaction,
// so a burst longer than a transaction's 5 s timeout admits what it can and refuses the rest with
// `429 rate_limit_exceeded` and `Retry-After`, never a transaction error (a 500 before).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { fromDomainError } from '../../../src/http/errors.ts';
import { admitReportRun, type ReportLimits } from '../../../src/reports/runs/limits.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { broker } from '../../helpers/factories.ts';

const SERVER = process.env.DATABASE_URL?.trim() || 'postgresql://postgres@127.0.0.1:5432/postgres';
let db: TestDatabase;

before(async () => {
  db = await createTestDatabase({ databaseUrl: SERVER });
});
after(async () => {
  await db?.drop();
});

const limits: ReportLimits = { concurrentPerBroker: 64, perHourPerBroker: 1000, runningRetrySeconds: 20 };

/** An admission whose work inside the transaction takes `ms` (a report's run and recipients, widened). */
const admit = (brokerId: string, ms: number, waitMs?: number) =>
  admitReportRun(db.prisma, limits, brokerId, async (tx) => {
    const run = await tx.reportRun.create({ data: { brokerId, reportType: 'services' } });
    await new Promise((r) => setTimeout(r, ms));
    return run;
  }, waitMs);

function assertAdmissionRefused(err: unknown): void {
  const answer = fromDomainError(err);
  assert.equal(answer?.code, 'rate_limit_exceeded', String(err));
  assert.equal(answer.status, 429);
  assert.match(answer.headers['Retry-After'] ?? '', /^[1-9]\d*$/);
  assert.equal(answer.details?.reason, 'reports_concurrent_per_broker');
}

describe('report admissions under a burst', () => {
  test('an admission lock held too long is a 429 with Retry-After, and records nothing', async () => {
    const b = await broker(db.prisma);
    const holder = new pg.Client({ connectionString: db.databaseUrl });
    await holder.connect();
    try {
      await holder.query('SELECT pg_advisory_lock($1::int4, hashtext($2))', [0x52_50_54, b.id]);
      const refused = await admit(b.id, 0, 300).then(() => undefined, (err: unknown) => err);
      assertAdmissionRefused(refused);
    } finally {
      await holder.end();
    }
    assert.equal(await db.prisma.reportRun.count({ where: { brokerId: b.id } }), 0);
    await admit(b.id, 0); // the lock gone, the broker is admitted again
  });

  test('40 at once, each holding the lock 150 ms (6 s in all): admitted or 429, nothing else, never past the bound', async () => {
    const b = await broker(db.prisma);
    const settled = await Promise.allSettled(Array.from({ length: 40 }, () => admit(b.id, 150)));
    const admitted = settled.filter((s) => s.status === 'fulfilled').length;
    for (const s of settled) if (s.status === 'rejected') assertAdmissionRefused(s.reason);
    assert.ok(admitted >= 1, 'some were admitted');
    assert.equal(await db.prisma.reportRun.count({ where: { brokerId: b.id } }), admitted);
  });

  test('the concurrent bound still holds under a burst', async () => {
    const b = await broker(db.prisma);
    const small = { ...limits, concurrentPerBroker: 3 };
    const settled = await Promise.allSettled(
      Array.from({ length: 12 }, () => admitReportRun(db.prisma, small, b.id, (tx) => tx.reportRun.create({ data: { brokerId: b.id, reportType: 'services' } }))),
    );
    assert.equal(settled.filter((s) => s.status === 'fulfilled').length, 3);
    for (const s of settled) if (s.status === 'rejected') assert.equal(fromDomainError(s.reason)?.code, 'rate_limit_exceeded', String(s.reason));
    assert.equal(await db.prisma.reportRun.count({ where: { brokerId: b.id } }), 3);
  });
});
