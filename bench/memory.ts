/**
 * Memory of the server process by component: `node --expose-gc --import tsx bench/memory.ts`
 * (PGlite in a fresh temp directory, created and migrated by another process first, as a server
 * finds it; with DATABASE_URL set, that PostgreSQL instead; MEM_REPORT=0 skips the report part).
 *
 * Each step is done the way src/main/runtime.ts does it, then a full GC, then process.memoryUsage()
 * and /proc/self/status: `rss` after the step, `Δrss` over the previous step, and `peak` (VmHWM
 * during the step, reset through /proc/self/clear_refs). Growth that survives the GC is kept.
 * RSS moves ±10–20 MB between runs on a busy machine: read the big steps, not the small ones.
 *
 * Findings (2026-11-22, PGlite, 2 cores under load; MB of RSS):
 *   node + tsx 70 · express/helmet/pino 10 · express-openapi-validator 6 (+6 on createValidator;
 *   response validators are not built with VALIDATE_RESPONSES off) · @electric-sql/pglite import
 *   30–40 · pg + adapters + generated Prisma client 10 · bullmq/ioredis 15–20 · exceljs 25–30 ·
 *   PGlite open 245 → 90 with shared_buffers 16 MB (PostgreSQL touches its whole buffer pool in
 *   WASM memory, which never shrinks) · schema engine 30–45 when loaded (its linear memory is only
 *   2 MB; the rest is code and compiler memory the process keeps) → not loaded at all when nothing
 *   is pending · Prisma first query (query compiler WASM) 30–60 · young generation (V8 semi-spaces,
 *   16 MB default) ~40 → --max-semi-space-size=2 in the npm start scripts.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writingClient } from '../test/helpers/db.ts';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

const MB = 1024 * 1024;
let lastRss = 0;
const rows: Array<Record<string, string | number>> = [];

function kb(name: string): number {
  const text = readFileSync('/proc/self/status', 'utf8');
  return Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) / 1024;
}

/** Resets VmHWM (Linux clear_refs 5), so each row's `peak` is the high-water mark during that step. */
function resetPeak(): void {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
  } catch {
    // not permitted: the peak is then the process's since start
  }
}

async function step(name: string): Promise<void> {
  for (let i = 0; i < 3; i++) {
    gc!();
    await new Promise((r) => setImmediate(r));
  }
  const m = process.memoryUsage();
  const rss = m.rss / MB;
  rows.push({
    step: name,
    rss: Math.round(rss),
    'Δrss': Math.round(rss - lastRss),
    heapUsed: Math.round(m.heapUsed / MB),
    external: Math.round(m.external / MB),
    arrayBuffers: Math.round(m.arrayBuffers / MB),
    peak: Math.round(kb('VmHWM')),
  });
  resetPeak();
  lastRss = rss;
}

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'capi-mem-'));
if (!process.env.DATABASE_URL && process.env.MEM_FRESH !== '1') {
  // The server normally opens an existing directory: create and migrate it in another process
  // first, so initdb (a one-time, first-start cost) is not counted here.
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e',
    `const { openDatabase } = await import('./src/db/client.ts'); const d = await openDatabase({ dataDir: ${JSON.stringify(dataDir)}, serveSocket: false }); await d.close();`],
  { cwd: path.resolve(import.meta.dirname, '..'), stdio: 'inherit' });
  if (r.status !== 0) throw new Error('could not create the PGlite directory');
}
// An SMTP sink in a process of its own (its memory is not ours).
const sink = spawn(process.execPath, ['-e', `
  const { SMTPServer } = require('smtp-server');
  const s = new SMTPServer({ secure: false, authOptional: true, disabledCommands: ['STARTTLS', 'AUTH'], logger: false,
    size: 200 * 1024 * 1024, onData(stream, _s, cb) { stream.resume(); stream.on('end', () => cb()); } });
  s.listen(0, '127.0.0.1', () => process.send(s.server.address().port));`], { cwd: path.resolve(import.meta.dirname, '..'), stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
const smtpPort = await new Promise<number>((resolve) => sink.once('message', (m) => resolve(m as number)));
const env = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent', NODE_ENV: 'production', SMTP_URL: `smtp://127.0.0.1:${smtpPort}`, REPORT_WAIT_MS: '60000' };
try {
  await step('node + tsx');
  const { loadConfig } = await import('../src/config.ts');
  const { createLogger } = await import('../src/logger.ts');
  await step('config, logger (pino)');
  await import('express');
  await import('helmet');
  await step('import express, helmet');
  await import('express-openapi-validator');
  await step('import express-openapi-validator');
  await import('@electric-sql/pglite');
  await step('import @electric-sql/pglite');
  await import('pg');
  await import('@prisma/adapter-pg');
  await import('pglite-prisma-adapter');
  await step('import pg, adapters');
  await import('../generated/prisma/client.ts');
  await step('import generated prisma client');
  const dbClient = await import('../src/db/client.ts');
  await step('import src/db/client.ts');
  await import('../src/db/migrate.ts');
  await step('import migrate + schema-engine glue');
  await import('bullmq');
  await step('import bullmq, ioredis');
  await import('../src/jobs/index.ts');
  await step('import jobs (+ reports modules)');
  await import('../src/app.ts');
  await import('../src/main/runtime.ts');
  await step('import app + runtime (rest of the graph)');

  const config = loadConfig(env);
  const logger = createLogger('silent');
  const database = await dbClient.openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    migrate: false,
    serveSocket: !config.databaseUrl,
  });
  await step(`openDatabase ${database.kind} (no migrations)`);
  const { applyMigrations } = await import('../src/db/migrate.ts');
  const target = database.pglite
    ? ({ kind: 'pglite', pglite: database.pglite } as const)
    : ({ kind: 'postgres', connectionString: config.databaseUrl! } as const);
  const applied = await applyMigrations(target);
  await step(`applyMigrations (${applied.length} applied) → after`);
  await applyMigrations(target);
  await step('applyMigrations again (nothing to apply)');
  await database.prisma.$queryRawUnsafe('SELECT 1');
  await step('prisma first query');

  const { startRedis, requestRedis, waitUntilReady } = await import('../src/redis.ts');
  const redisEndpoint = await startRedis(config.redisUrl);
  const { createJobs } = await import('../src/background.ts');
  const jobs = createJobs({ redisEndpoint, prisma: database.prisma, database, config, logger, mode: 'both' });
  await jobs.startWorkers();
  await step('BullMQ queues + workers started');

  const redis = requestRedis(redisEndpoint);
  await waitUntilReady(redis);
  const { createGate } = await import('../src/auth/gate.ts');
  const gate = createGate({ prisma: database.prisma, redis, logger });
  const { loadContract } = await import('../src/http/contract.ts');
  const contract = loadContract();
  await step('gate + contract (openapi.yaml parsed)');
  const { createValidator } = await import('../src/http/validation.ts');
  const validator = createValidator(contract, false);
  await step('createValidator (responses off)');
  const { createApp } = await import('../src/app.ts');
  const { createServiceReadCache } = await import('../src/services/read-cache.ts');
  const serviceReads = createServiceReadCache({ ttlMs: config.servicesCacheMs, redis, logger });
  const { loadedOnce } = await import('../src/deps.ts');
  const { openChunkReader } = await import('../src/reports/workbook/store.ts');
  const app = createApp({ config, logger, contract, prisma: database.prisma, readChunk: openChunkReader({ prisma: database.prisma, url: database.databaseUrl }).read, redis, gate: gate.gate, consoleSessions: gate.consoleSessions, flushApiLog: gate.apiLog.flush, jobs, serviceReads, ...loadedOnce(config, database.prisma) });
  const { listen } = await import('../src/main/server.ts');
  const listening = await listen(app, { ...config, port: 0 });
  const r = await fetch(`${listening.url}/api/v1/reports/invoices`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
  await r.arrayBuffer();
  await new Promise((res) => setTimeout(res, 500));
  await step('createApp + listen + first request');
  void validator;

  if (process.env.MEM_REPORT !== '0') {
    const n = Number(process.env.BENCH_INVOICES ?? 100_000);
    await writingClient(database.prisma).$executeRawUnsafe(`INSERT INTO brokers (id, slug, name, email) VALUES ('brk_mem', 'mem', 'Mem', 'mem@broker.example')`);
    await writingClient(database.prisma).$executeRawUnsafe(`
      INSERT INTO invoices (broker_id, number, service_number, amount, currency, status, date)
      SELECT 'brk_mem', 'INV-' || lpad(g::text, 7, '0'), 100000000 + g % 5000, (10 + g % 9000 + (g % 100) / 100.0)::numeric(14,2),
             CASE WHEN g % 10 = 0 THEN 'USD' ELSE 'EUR' END,
             (CASE WHEN g % 4 = 0 THEN 'pending' ELSE 'paid' END)::invoice_status, DATE '2025-01-01' + g % 365
      FROM generate_series(1, ${n}) g`);
    await step(`seed ${n} invoices (SQL)`);
    const spec = {
      type: 'invoices' as const,
      brokerId: 'brk_mem',
      apiKeyId: null,
      recipients: Array.from({ length: 10 }, (_, i) => `finance${i + 1}@broker.example`),
      startDate: '2025-01-01',
      endDate: '2025-12-31',
    };
    const { sendReport } = await import('../src/reports/use-cases.ts');
    for (let run = 1; run <= 2; run++) {
      const t = performance.now();
      const result = await sendReport({ prisma: database.prisma, config, log: logger, queues: jobs.queues }, spec);
      await step(`report run ${run}: ${Math.round(performance.now() - t)} ms, sent ${result.recipientsSent}`);
    }
  }

  console.table(rows);
  await listening.close(1000);
  await gate.apiLog.close();
  redis.disconnect();
  await jobs.close();
  await database.close();
  await redisEndpoint.stop();
} finally {
  sink.kill();
  rmSync(dataDir, { recursive: true, force: true });
}
