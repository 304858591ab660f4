// A failed report build is counted where a scrape sees it (issue 45 item 5, issue 47 item 1):
// /metrics `report_builds_failed_total`, once per failed attempt, as src/background.ts wires it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { loadConfig } from '../../../src/config.ts';
import { processBuild, type Pipeline } from '../../../src/reports/delivery/pipeline.ts';
import { recordBuildFailed, registry } from '../../../src/ops/metrics.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { broker } from '../../helpers/factories.ts';

let db: TestDatabase;
before(async () => {
  db = await createTestDatabase();
});
after(() => db?.drop());

async function buildsFailed(): Promise<number> {
  const line = (await registry.metrics()).split('\n').find((l) => l.startsWith('report_builds_failed_total '));
  return Number(line?.split(' ')[1]);
}

test('a build whose thread cannot reach the database fails, is logged, and is counted in /metrics', async () => {
  const brk = await broker(db.prisma);
  const run = await db.prisma.reportRun.create({
    data: { brokerId: brk.id, reportType: 'invoices', startDate: new Date('2025-01-01'), endDate: new Date('2025-01-31'), status: 'queued', recipients: { create: [{ email: 'a@broker.example' }] } },
  });
  const config = loadConfig({ DATA_DIR: '/nonexistent', DB_STATEMENT_TIMEOUT_MS: '2000' });
  const p = {
    prisma: db.prisma,
    config,
    log: pino({ level: 'silent' }),
    // Nothing listens on port 1: the build thread's own connection is refused.
    buildUrl: 'postgres://postgres@127.0.0.1:1/none',
    buildFailed: recordBuildFailed,
  } as unknown as Pipeline;
  const before = await buildsFailed();
  assert.equal(before, 0);
  await assert.rejects(processBuild(p, { id: 'b1', data: { runId: run.id }, attemptsMade: 0 } as never));
  assert.equal(await buildsFailed(), 1);
  await assert.rejects(processBuild(p, { id: 'b1', data: { runId: run.id }, attemptsMade: 1 } as never));
  assert.equal(await buildsFailed(), 2);
  // Not its last attempt: the run waits for the next one.
  assert.equal((await db.prisma.reportRun.findUniqueOrThrow({ where: { id: run.id } })).status, 'building');
});
