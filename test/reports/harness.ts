import { randomBytes } from 'node:crypto';
import type { Express } from 'express';
import { createApp } from '../../src/app.ts';
import type { Config } from '../../src/config.ts';
import { createJobs, type Jobs, type JobsMode } from '../../src/background.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';

/**
 * The shared test app (database, Redis, gate, response validation) with report jobs of its own:
 * jobs on a BullMQ prefix of their own, so several configurations (SMTP server, wait budget) can
 * share one test app's Redis without taking each other's jobs.
 */
export interface ReportTestApp {
  t: TestApp;
  /** An app whose jobs use `config` (the test app's config with the overrides). */
  withJobs(overrides?: Partial<Config>, mode?: JobsMode): Promise<{ app: Express; jobs: Jobs; config: Config; prefix: string }>;
  /** Closes the jobs made so far: each fleet's reconciler would otherwise go on resuming the next test's sends. */
  closeJobs(): Promise<void>;
  close(): Promise<void>;
}

export async function createReportTestApp(baseOverrides: Partial<Config> = {}): Promise<ReportTestApp> {
  const t = await createTestApp(baseOverrides);
  const all: Jobs[] = [];
  const closeJobs = async () => {
    for (const jobs of all.splice(0)) await jobs.close();
  };
  return {
    t,
    async withJobs(overrides = {}, mode = 'both') {
      const config: Config = { ...t.deps.config, ...overrides };
      const prefix = `t${randomBytes(4).toString('hex')}`;
      const jobs = createJobs({ redisEndpoint: t.redisEndpoint, prisma: t.prisma, database: t.database, config, logger: t.deps.logger, mode, prefix, closeTimeoutMs: 2000 });
      all.push(jobs);
      if (mode !== 'producer') await jobs.startWorkers();
      const app = createApp({ ...t.deps, config, jobs });
      return { app, jobs, config, prefix };
    },
    closeJobs,
    async close() {
      await closeJobs();
      await t.close();
    },
  };
}

export interface InvoiceSeed {
  number?: string;
  serviceNumber?: number;
  amount?: string;
  currency?: string;
  status: 'paid' | 'pending' | 'overdue' | 'cancelled' | 'refunded';
  date: string;
}

let seq = 0;
export async function addInvoices(t: TestApp, brokerId: string, invoices: InvoiceSeed[]): Promise<void> {
  await t.prisma.invoice.createMany({
    data: invoices.map((inv) => {
      seq += 1;
      return {
        brokerId,
        number: inv.number ?? `INV-${String(seq).padStart(6, '0')}`,
        serviceNumber: inv.serviceNumber ?? 100000000 + seq,
        amount: inv.amount ?? '10.00',
        currency: inv.currency ?? 'EUR',
        status: inv.status,
        date: new Date(`${inv.date}T00:00:00Z`),
      };
    }),
  });
}
