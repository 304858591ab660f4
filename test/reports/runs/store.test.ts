/**
 * The run's counts (src/reports/run-store.ts) when sends finish on several workers at once and the
 * reconciler settles runs beside them: every count is taken and stored under the run's row lock, in
 * the transaction of the outcome it counts, so no count taken before another worker's outcome is
 * stored after it, and a run completes once, with its event.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  createRunRecords,
  failRunRecords,
  recordOutcomeAndCounts,
  recordSendFailed,
  settleRunCounts,
} from '../../../src/reports/runs/store.ts';
import { findReportRun } from '../../../src/reports/runs/present.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { broker } from '../../helpers/factories.ts';

let db: TestDatabase;
let brokerId: string;

before(async () => {
  db = await createTestDatabase();
  brokerId = (await broker(db.prisma)).id;
});
after(async () => {
  await db?.drop();
});

/** A `sending` run with `emails` waiting recipients; their ids in the order given. */
async function sendingRun(emails: string[]): Promise<{ runId: string; recipientIds: number[] }> {
  const { id } = await db.prisma.$transaction((tx) => createRunRecords(tx, { brokerId, reportType: 'invoices', status: 'sending' }, emails));
  const recipients = await db.prisma.reportRecipient.findMany({ where: { reportRunId: id }, orderBy: { id: 'asc' }, select: { id: true } });
  return { runId: id, recipientIds: recipients.map((r) => r.id) };
}

/** A recipient whose e-mail the SMTP server accepted, as a send records it (without the run's counts). */
const markSent = (recipientId: number, messageId: string) =>
  db.prisma.reportRecipient.update({ where: { id: recipientId }, data: { status: 'sent', messageId, sentAt: new Date(), error: null, claimedAt: null } });

const runOf = (runId: string) => db.prisma.reportRun.findUniqueOrThrow({ where: { id: runId } });

describe('report run counts (src/reports/run-store.ts)', () => {
  test('counts are taken and stored under the run\'s lock: a settle that waits for an outcome counts it', async () => {
    const { runId, recipientIds: [a, b, c] } = await sendingRun(['a@example.com', 'b@example.com', 'c@example.com']);
    await recordSendFailed(db.prisma, a!, 'connect ECONNREFUSED', true);
    await recordSendFailed(db.prisma, b!, 'connect ECONNREFUSED', true);
    // The last outcome and the reconciler's settle at once: whichever takes the lock second sees the other's work.
    const [outcome, settled] = await Promise.all([
      recordOutcomeAndCounts(db.prisma, runId, c!, { sent: false, error: 'connect ECONNREFUSED', final: true }),
      settleRunCounts(db.prisma, runId),
    ]);
    assert.equal(Number(outcome.completed) + Number(settled.completed), 1, 'the run completes exactly once');
    const run = await runOf(runId);
    assert.deepEqual([run.status, run.recipientsSent, run.recipientsFailed], ['completed', 0, 3]);
    const events = await db.prisma.event.findMany({ where: { brokerId, type: 'report.completed' } });
    assert.equal(events.filter((e) => (e.data as { object: { report_id: string } }).object.report_id === runId).length, 1);
  });

  test('a settle with recipients still open stores the counts and leaves the run sending', async () => {
    const { runId, recipientIds: [a, b] } = await sendingRun(['a@example.com', 'b@example.com', 'c@example.com']);
    await markSent(a!, '<m1@example.com>');
    await recordSendFailed(db.prisma, b!, 'mailbox unavailable', true);
    assert.deepEqual(await settleRunCounts(db.prisma, runId), { counts: { sent: 1, failed: 1, pending: 1 }, completed: false });
    const run = await runOf(runId);
    assert.deepEqual([run.recipientsSent, run.recipientsFailed, run.status], [1, 1, 'sending']);
  });

  test('settling marks the run as changed now (the reconciler leaves it alone)', async () => {
    const { runId } = await sendingRun(['a@example.com']);
    const long = new Date(Date.now() - 3_600_000);
    await db.prisma.reportRun.update({ where: { id: runId }, data: { updatedAt: long } });
    await settleRunCounts(db.prisma, runId);
    assert.ok((await runOf(runId)).updatedAt.getTime() > long.getTime() + 60_000);
  });

  test('the run\'s end writes its event once: report.completed with the run as GET /reports/{id} shows it', async () => {
    const { runId, recipientIds: [a] } = await sendingRun(['a@example.com']);
    await markSent(a!, '<m@example.com>');
    assert.equal((await settleRunCounts(db.prisma, runId)).completed, true);
    assert.equal((await settleRunCounts(db.prisma, runId)).completed, false, 'a completed run is not completed again');
    const events = await db.prisma.event.findMany({ where: { brokerId, type: { startsWith: 'report.' } } });
    const mine = events.filter((e) => (e.data as { object: { report_id: string } }).object.report_id === runId);
    assert.deepEqual(mine.map((e) => [e.type, e.mode]), [['report.completed', 'live']]);
    assert.deepEqual((mine[0]!.data as { object: unknown }).object, await findReportRun(db.prisma, { brokerId, mode: 'live' }, runId));
  });

  test('a run that fails before any e-mail writes report.failed once, its recipients failed', async () => {
    const { id: runId } = await db.prisma.$transaction((tx) => createRunRecords(tx, { brokerId, reportType: 'invoices', status: 'building' }, ['a@example.com', 'b@example.com']));
    await failRunRecords(db.prisma, runId, 'the workbook could not be built', ['queued', 'building']);
    await failRunRecords(db.prisma, runId, 'the workbook could not be built', ['queued', 'building']);
    const events = await db.prisma.event.findMany({ where: { brokerId, type: 'report.failed' } });
    const mine = events.filter((e) => (e.data as { object: { report_id: string } }).object.report_id === runId);
    assert.equal(mine.length, 1);
    const object = (mine[0]!.data as { object: { status: string; recipients_failed: number; error: string } }).object;
    assert.deepEqual([object.status, object.recipients_failed, object.error], ['failed', 2, 'the workbook could not be built']);
  });

  test('outcomes recorded at once: the last one completes the run in its own commit, once, with every count', async () => {
    const emails = Array.from({ length: 6 }, (_, i) => `r${i}@example.com`);
    const { runId, recipientIds } = await sendingRun(emails);
    const results = await Promise.all(
      recipientIds.map((id, i) =>
        recordOutcomeAndCounts(db.prisma, runId, id, i % 2 === 0 ? { sent: true, messageId: `<m${i}@example.com>`, linkExpiresAt: null } : { sent: false, error: '550 rejected', final: true }),
      ),
    );
    assert.equal(results.filter((r) => r.completed).length, 1, 'exactly one outcome completes the run');
    const last = results.find((r) => r.completed)!;
    assert.deepEqual(last.counts, { sent: 3, failed: 3, pending: 0 });
    const run = await runOf(runId);
    assert.deepEqual([run.status, run.recipientsSent, run.recipientsFailed], ['completed', 3, 3]);
    const events = (await db.prisma.event.findMany({ where: { brokerId, type: 'report.completed' } })).filter((e) => (e.data as { object: { report_id: string } }).object.report_id === runId);
    assert.equal(events.length, 1);
  });

  test('an outcome that leaves a recipient open stores the counts and leaves the run sending', async () => {
    const { runId, recipientIds: [a] } = await sendingRun(['a@example.com', 'b@example.com']);
    const r = await recordOutcomeAndCounts(db.prisma, runId, a!, { sent: true, messageId: '<m@example.com>', linkExpiresAt: null });
    assert.deepEqual(r, { counts: { sent: 1, failed: 0, pending: 1 }, completed: false });
    const run = await runOf(runId);
    assert.deepEqual([run.status, run.recipientsSent], ['sending', 1]);
  });
});
