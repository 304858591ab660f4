/**
 * The running processes of one database (table `process_registry`): each records its role, the
 * settings every process must share, and a heartbeat. A process that disagrees with a live one is
 * refused before it serves or takes a job (issue 45 item 1); `/metrics` counts the live ones.
 * Times are the database's (`now()`), so the hosts' clocks do not matter.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { Gauge } from 'prom-client';
import { mailTarget, type Config, type Role } from '../config.ts';
import type { Logger } from '../logger.ts';
import { registry } from './metrics.ts';
import type { ReadClient } from '../shared/db-errors.ts';

/** How often a process renews its heartbeat. */
export const HEARTBEAT_MS = 5000;
/** A process is live while its heartbeat is younger than this: four beats, so a slow one is not taken for dead. */
export const LIVE_WITHIN_MS = 20_000;
/** Rows older than this are deleted when a process starts: processes that died long ago. */
const FORGET_AFTER_MS = 24 * 3600_000;

type Holder = 'api' | 'worker';

interface SharedSetting {
  name: string;
  /** The halves that use it: two processes are compared only on settings both use. */
  usedBy: readonly Holder[];
  value(config: Config, redisDescription: string): string;
}

/**
 * Each value is the one in use, defaults included, and never holds a password: Redis as
 * host:port/db (a private redis-server by its socket, which no other process shares), SMTP as
 * scheme://host:port or the outbox directory. CREDENTIALS_KEY has its own check (src/db/credentials.ts).
 */
export const SHARED_SETTINGS: readonly SharedSetting[] = [
  // Queues, rate-limit counters and the services cache's notices live in that Redis database.
  { name: 'REDIS_URL', usedBy: ['api', 'worker'], value: (_c, redis) => redis },
  // Console sign-in links (API) and report download links (worker) must reach the same place.
  { name: 'PUBLIC_BASE_URL', usedBy: ['api', 'worker'], value: (c) => c.publicBaseUrl },
  // An endpoint the API accepted must be one every worker delivers to.
  { name: 'WEBHOOK_ALLOW_PRIVATE_URLS', usedBy: ['api', 'worker'], value: (c) => String(c.webhookAllowPrivateUrls) },
  // A report's recipients are sent by any worker: one writing files among SMTP senders loses them.
  { name: 'SMTP_URL', usedBy: ['worker'], value: (c) => mailTarget(c) },
  // Attachment or download links for the same report, depending on which worker built it.
  { name: 'REPORT_ATTACHMENT_MAX_BYTES', usedBy: ['worker'], value: (c) => String(c.reportAttachmentMaxBytes) },
  // A broker's admissions are counted in the database by every API: each must stop at the same bound.
  { name: 'REPORTS_CONCURRENT_PER_BROKER', usedBy: ['api'], value: (c) => String(c.reportsConcurrentPerBroker) },
  { name: 'REPORTS_PER_HOUR_PER_BROKER', usedBy: ['api'], value: (c) => String(c.reportsPerHourPerBroker) },
];

const holds = (role: string, setting: SharedSetting): boolean => role === 'all' || setting.usedBy.includes(role as Holder);

/** The shared settings of a process of `role`, by name (only those its halves use). */
export function sharedSettingsOf(role: Role, config: Config, redisDescription: string): Record<string, string> {
  return Object.fromEntries(SHARED_SETTINGS.filter((s) => holds(role, s)).map((s) => [s.name, s.value(config, redisDescription)]));
}

export interface RegisteredProcess {
  id: string;
  role: string;
  hostname: string;
  pid: number;
  settings: Record<string, string>;
  /** Milliseconds since its last heartbeat. */
  ageMs: number;
}

/**
 * The first shared setting on which `mine` disagrees with a live process, as a one-line refusal;
 * undefined when they agree on every setting both use.
 */
export function disagreement(role: Role, mine: Record<string, string>, live: readonly RegisteredProcess[]): string | undefined {
  for (const other of live) {
    for (const setting of SHARED_SETTINGS) {
      if (!holds(role, setting) || !holds(other.role, setting)) continue;
      const theirs = other.settings[setting.name];
      if (theirs === undefined || theirs === mine[setting.name]) continue;
      return (
        `${setting.name} is ${mine[setting.name]} here, but the live ${other.role} process ${other.pid} on ${other.hostname} ` +
        `(heartbeat ${Math.round(other.ageMs / 1000)} s ago) uses ${theirs}: every process on one database needs the same ${setting.name}; ` +
        `to change it, stop every process first (docs/running-apart.md)`
      );
    }
  }
  return undefined;
}

/** A process row left by an earlier run on this host (this pid again, or a pid that is gone) is not live. */
function goneFromThisHost(row: Pick<RegisteredProcess, 'hostname' | 'pid'>): boolean {
  if (row.hostname !== os.hostname()) return false;
  if (row.pid === process.pid) return true;
  try {
    process.kill(row.pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

export class SetupRefusedError extends Error {}

export interface ProcessRegistration {
  id: string;
  /** Stops the heartbeat and removes the row (a process killed leaves it to go stale). */
  close(): Promise<void>;
}

/**
 * Records this process, refusing it (SetupRefusedError, naming the setting) when it disagrees with
 * a live process. Under an advisory lock, so two processes starting at once are compared too.
 */
export async function registerProcess(
  prisma: ReadClient,
  parts: { role: Role; settings: Record<string, string>; logger: Logger },
): Promise<ProcessRegistration> {
  const { role, settings, logger } = parts;
  const id = randomUUID();
  const hostname = os.hostname();
  const insert = (db: Pick<ReadClient, '$executeRaw'>) =>
    db.$executeRaw`INSERT INTO process_registry (id, role, hostname, pid, settings) VALUES (${id}::uuid, ${role}, ${hostname}, ${process.pid}, ${JSON.stringify(settings)}::jsonb)`;
  await prisma.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('process_registry'))`;
    const rows = await tx.$queryRaw<Array<Omit<RegisteredProcess, 'ageMs'> & { ageMs: number }>>`
      SELECT id::text, role, hostname, pid, settings,
             (extract(epoch FROM now() - heartbeat_at) * 1000)::float8 AS "ageMs"
        FROM process_registry
       WHERE heartbeat_at > now() - make_interval(secs => ${LIVE_WITHIN_MS / 1000}::float8)`;
    const refusal = disagreement(role, settings, rows.filter((r) => !goneFromThisHost(r)));
    if (refusal) throw new SetupRefusedError(refusal);
    await tx.$executeRaw`DELETE FROM process_registry WHERE heartbeat_at < now() - make_interval(secs => ${FORGET_AFTER_MS / 1000}::float8)`;
    await insert(tx);
  });
  let failing = false;
  const beat = async () => {
    try {
      // A row deleted meanwhile (by hand) is written again: the process is still running.
      if ((await prisma.$executeRaw`UPDATE process_registry SET heartbeat_at = now() WHERE id = ${id}::uuid`) === 0) await insert(prisma);
      if (failing) logger.info({ component: 'process-registry' }, 'process heartbeat recorded again');
      failing = false;
    } catch (err) {
      if (!failing) logger.warn({ err, component: 'process-registry' }, 'process heartbeat not recorded');
      failing = true;
    }
  };
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    running ??= beat().finally(() => {
      running = undefined;
    });
  }, HEARTBEAT_MS);
  timer.unref();
  return {
    id,
    async close() {
      clearInterval(timer);
      await running;
      await prisma.$executeRaw`DELETE FROM process_registry WHERE id = ${id}::uuid`;
    },
  };
}

export const workersAlive = new Gauge({
  name: 'workers_alive',
  help: 'Server processes on this database whose heartbeat is fresh, by role (api, worker); an all-in-one npm start counts as one of each',
  labelNames: ['role'] as const,
  registers: [registry],
});

/** Reads the live processes into `workers_alive`; with the database unreachable the gauge is left empty, not stale. */
export async function refreshWorkersAlive(prisma: ReadClient): Promise<boolean> {
  try {
    const rows = await prisma.$queryRaw<Array<{ role: string; n: number }>>`
      SELECT role, count(*)::int AS n FROM process_registry
       WHERE heartbeat_at > now() - make_interval(secs => ${LIVE_WITHIN_MS / 1000}::float8)
       GROUP BY role`;
    const count = (r: string) => rows.find((row) => row.role === r)?.n ?? 0;
    workersAlive.set({ role: 'api' }, count('api') + count('all'));
    workersAlive.set({ role: 'worker' }, count('worker') + count('all'));
    return true;
  } catch {
    workersAlive.reset();
    return false;
  }
}
