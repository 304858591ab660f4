/**
 * Webhook delivery in the worker; the database is the record, Redis only queues the attempts.
 * The dispatcher (each worker, every DISPATCH_MS and after each attempt) claims due deliveries
 * under a lease, fairly (delivery-store.ts, claimDue), and queues one job per claim, its id
 * `<delivery>.<attempt>.<lease's end>`: a delivery claimed again once a dead worker's lease
 * lapsed gets a new job at once. A job sends only while its lease is the delivery's, and its
 * record is fenced on that lease, so a late job never sends or records after a new claim.
 * At least once: an attempt not recorded is made again after its lease lapses; receivers skip
 * repeats by `webhook-id`. Order is not promised.
 */
import type { Job } from 'bullmq';
import type { Config } from '../config.ts';
import type { JobQueues } from '../jobs/index.ts';
import { eventData } from '../events/use-cases.ts';
import type { Logger } from '../logger.ts';
import { deliver } from './deliver.ts';
import {
  anyDue,
  claimDue,
  failDeliveriesOfDisabledEndpoints,
  failDelivery,
  findDelivery,
  leaseHolders,
  recordAttempt,
  releaseLeasesOf,
  takeLease,
  type DeliveryRecord,
} from './delivery-store.ts';
import type { WorkerLiveness } from './heartbeat.ts';
import { nextAttemptDelayMs } from './schedule.ts';
import { signatureHeaders } from './sign.ts';
import { traced } from '../shared/tracing.ts';
import type { ReadClient } from '../shared/db-errors.ts';

/** The queue of webhook attempts. */
export const WEBHOOKS_QUEUE = 'webhooks';

/**
 * Attempts at once in one worker process: they mostly wait on the network. It also bounds the
 * deliveries under a lease at once, every worker's together, so a claimed attempt never waits in
 * the queue behind others (with more workers, some of their slots stay free).
 */
export const WEBHOOK_CONCURRENCY = 32;

/** Deliveries of one endpoint under a lease at once: a slow or dead endpoint holds this many slots, never all. */
export const PER_ENDPOINT_IN_FLIGHT = 4;

/** Deliveries of one broker in one mode under a lease at once: its slow endpoints hold this many slots, live and test each. */
export const PER_BROKER_IN_FLIGHT = 8;

/** Test-mode deliveries under a lease at once, every broker's: the sandbox never takes more of the live deliveries' slots. */
export const TEST_MODE_IN_FLIGHT = 12;

/** How often each worker claims due deliveries: a new event's first attempt starts within about this. */
export const DISPATCH_MS = 250;

/** Beyond the attempt's timeout, for the job's wait in the queue and the record (a lapsed lease is only claimed again). */
const LEASE_MARGIN_MS = 10_000;

/** Who is calling, as receivers see it in their logs. */
export const WEBHOOK_USER_AGENT = 'client-api-v1-webhooks/1 (Standard Webhooks)';

export interface WebhookJobData {
  deliveryId: string;
  /** The attempt's number. */
  number: number;
  /** The claim's lease end, in ms since the epoch: with the delivery and the number it names the job, one per claim. */
  leasedUntil: number;
}

export const webhookJobId = (deliveryId: string, number: number, leasedUntil: number) => `delivery.${deliveryId}.${number}.${leasedUntil}`;

export interface WebhookWorkOptions {
  prisma: ReadClient;
  config: Pick<Config, 'webhookTimeoutMs' | 'webhookRetrySchedule' | 'webhookDisableAfterHours' | 'webhookAllowPrivateUrls'>;
  log: Logger;
  queues: Pick<JobQueues, 'add'>;
  /** Decrypts an endpoint's stored secret (the credentials key, src/db/credentials.ts). */
  decrypt: (stored: string) => Promise<string>;
  /** Heartbeats of the worker processes (this one's kept by its owner until its jobs are done); without them a dead worker's leases only lapse. */
  liveness?: WorkerLiveness | undefined;
}

export interface WebhookWork {
  /** Claims what is due and queues its attempts; how many were queued. */
  dispatch(): Promise<number>;
  /** The `webhooks` queue's processor: one attempt of one delivery. */
  process(job: Job<WebhookJobData>): Promise<unknown>;
  /** Dispatches now, every DISPATCH_MS and after each attempt, until stopped; starts the heartbeat, which runs until the liveness is closed. */
  startDispatching(): { stop(): Promise<void> };
}

/** The event as it is POSTed: the same JSON as GET /api/v1/events/{event_id} shows it. */
export function eventBody(event: DeliveryRecord['event']): string {
  return JSON.stringify(eventData(event));
}

/** The secrets to sign with: the current one, and the previous one while it has not expired. */
async function secretsOf(endpoint: DeliveryRecord['endpoint'], decrypt: WebhookWorkOptions['decrypt'], now: Date): Promise<string[]> {
  const secrets = [await decrypt(endpoint.secret)];
  if (endpoint.previousSecret && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > now) {
    secrets.push(await decrypt(endpoint.previousSecret));
  }
  return secrets;
}

/**
 * Runs `dispatch` every DISPATCH_MS and whenever kicked, never two at once: a kick during a run
 * makes one more run right after it, however many kicks came. While the database is away it fails
 * every DISPATCH_MS; the first failure and one in 40 are logged.
 */
function coalesced(dispatch: () => Promise<number>, log: Logger) {
  let running = false;
  let again = false;
  let stopped = true;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> = Promise.resolve();
  const run = async (): Promise<void> => {
    running = true;
    try {
      do {
        again = false;
        try {
          await dispatch();
          failures = 0;
        } catch (err) {
          if (failures++ % 40 === 0) log.warn({ err, failures }, 'webhook dispatch failed; trying again');
        }
      } while (again && !stopped);
    } finally {
      running = false;
    }
  };
  const kick = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    current = run();
  };
  const tick = (): void => {
    kick();
    timer = setTimeout(tick, DISPATCH_MS);
    timer.unref();
  };
  return {
    kick,
    start() {
      stopped = false;
      tick();
      return {
        async stop() {
          stopped = true;
          clearTimeout(timer);
          await current;
        },
      };
    },
  };
}

/** How often a dispatcher looks for lease holders whose heartbeat is missing. */
export const LIVENESS_CHECK_MS = 1000;
/** A holder is dead once its heartbeat was missing on two checks this far apart, and on every one between. */
export const RELEASE_AFTER_MS = 5000;

/**
 * Releases the leases of workers whose heartbeat stopped. Two checks apart, not one: a Redis that
 * restarted empty loses every key at once, and live workers put theirs back within a second.
 */
function deadWorkerReleaser(prisma: ReadClient, liveness: WorkerLiveness, log: Logger) {
  const missingSince = new Map<string, number>();
  let checkedAt = 0;
  return async (): Promise<void> => {
    const now = Date.now();
    if (now - checkedAt < LIVENESS_CHECK_MS) return;
    checkedAt = now;
    const holders = (await leaseHolders(prisma)).filter((id) => id !== liveness.workerId);
    let alive: Set<string>;
    try {
      alive = await liveness.alive(holders);
    } catch (err) {
      // Nothing is known until Redis answers again: a key it lost must be missed twice from then on.
      missingSince.clear();
      log.debug({ err }, 'worker heartbeats unknown; no lease released');
      return;
    }
    for (const id of missingSince.keys()) if (!holders.includes(id) || alive.has(id)) missingSince.delete(id);
    const dead = holders.filter((id) => !alive.has(id) && now - (missingSince.get(id) ?? now) >= RELEASE_AFTER_MS);
    for (const id of holders) if (!alive.has(id) && !missingSince.has(id)) missingSince.set(id, now);
    if (dead.length === 0) return;
    const released = await releaseLeasesOf(prisma, dead);
    for (const id of dead) missingSince.delete(id);
    log.warn({ workers: dead, released }, 'released the webhook leases of workers whose heartbeat stopped');
  };
}

/** One attempt of a delivery under the lease `leasedUntil`: sign, POST, record. */
async function attempt(options: WebhookWorkOptions, log: Logger, delivery: DeliveryRecord, number: number, leasedUntil: Date): Promise<unknown> {
  const { prisma, config } = options;
  const { event, endpoint } = delivery;
  const deliveryId = delivery.id.toString();
  const attemptedAt = new Date();
  const body = eventBody(event);
  const headers = signatureHeaders({ eventId: event.id, body, secrets: await secretsOf(endpoint, options.decrypt, attemptedAt), at: attemptedAt });
  // The endpoint's id, never its URL (a receiver's URL may hold a token of its own).
  const spanOf = { 'webhook.delivery_id': deliveryId, 'webhook.endpoint_id': endpoint.id, 'webhook.attempt': number, 'webhook.event_type': event.type };
  const result = await traced('webhook delivery', 'client', spanOf, async (span) => {
    const answer = await deliver({ url: endpoint.url, body, headers, timeoutMs: config.webhookTimeoutMs, allowPrivate: config.webhookAllowPrivateUrls, userAgent: WEBHOOK_USER_AGENT });
    span.set({ 'http.response.status_code': answer.status, 'webhook.error': answer.error });
    if (!answer.ok) span.fail();
    return answer;
  });
  // Not recorded (the database away): the job fails, the lease lapses and the attempt is made again.
  const recorded = await recordAttempt(prisma, {
    deliveryId,
    endpointId: endpoint.id,
    number,
    leasedUntil,
    attemptedAt,
    ok: result.ok,
    gone: result.gone,
    statusCode: result.status,
    error: result.error,
    durationMs: result.durationMs,
    responseExcerpt: result.excerpt,
    nextDelayMs: result.ok ? null : nextAttemptDelayMs(config.webhookRetrySchedule, number),
    disableAfterHours: config.webhookDisableAfterHours,
  });
  if (recorded.recorded && recorded.disabledReason) log.warn({ endpointId: endpoint.id, reason: recorded.disabledReason }, 'webhook endpoint disabled');
  return { status: result.status, error: result.error, ...recorded };
}

/** The claim's bounds (see claimDue): every worker's leases together fit one worker's slots. */
const CLAIM_BOUNDS = {
  limit: WEBHOOK_CONCURRENCY,
  inFlight: WEBHOOK_CONCURRENCY,
  perEndpoint: PER_ENDPOINT_IN_FLIGHT,
  perBroker: PER_BROKER_IN_FLIGHT,
  testMode: TEST_MODE_IN_FLIGHT,
} as const;

export function createWebhookWork(options: WebhookWorkOptions): WebhookWork {
  const { prisma, config, queues } = options;
  const log = options.log.child({ component: 'webhooks' });
  const leaseMs = config.webhookTimeoutMs + LEASE_MARGIN_MS;
  const workerId = options.liveness?.workerId ?? null;
  const releaseDead = options.liveness ? deadWorkerReleaser(prisma, options.liveness, log) : async () => undefined;

  async function dispatch(): Promise<number> {
    // Every lease is of a due delivery: with nothing due, nothing is leased either.
    if (!(await anyDue(prisma))) return 0;
    await failDeliveriesOfDisabledEndpoints(prisma);
    await releaseDead();
    const claimed = await claimDue(prisma, { ...CLAIM_BOUNDS, leaseMs, leasedBy: workerId });
    for (const { deliveryId, number, leasedUntil } of claimed) {
      const data: WebhookJobData = { deliveryId, number, leasedUntil: leasedUntil.getTime() };
      await queues.add(WEBHOOKS_QUEUE, 'deliver', data, { jobId: webhookJobId(deliveryId, number, data.leasedUntil), attempts: 1 });
    }
    return claimed.length;
  }

  // An endpoint's next deliveries are claimed as soon as one of its attempts is recorded, not
  // at the next tick: otherwise one endpoint would get at most PER_ENDPOINT_IN_FLIGHT a tick.
  const dispatcher = coalesced(dispatch, log);

  async function process(job: Job<WebhookJobData>): Promise<unknown> {
    try {
      return await processOne(job);
    } finally {
      dispatcher.kick();
    }
  }

  async function processOne(job: Job<WebhookJobData>): Promise<unknown> {
    const { deliveryId, number } = job.data;
    // A job from before lease-named jobs has no lease: its delivery is claimed again once that lapses.
    if (typeof job.data.leasedUntil !== 'number') return { skipped: 'not this lease' };
    const leasedUntil = new Date(job.data.leasedUntil);
    // Gone with its event (retention), finished, this attempt made already, claimed again since, or
    // too little lease left to finish under it: the job does nothing, and the delivery's lease decides.
    if (!(await takeLease(prisma, { deliveryId, number, leasedUntil, forMs: config.webhookTimeoutMs, by: workerId }))) return { skipped: 'not this lease' };
    const delivery = await findDelivery(prisma, deliveryId);
    if (!delivery || delivery.status !== 'pending' || delivery.attempts !== number - 1) return { skipped: 'not this lease' };
    if (delivery.endpoint.status !== 'enabled' && delivery.event.type !== 'ping') {
      await failDelivery(prisma, deliveryId, delivery.attempts);
      return { skipped: 'endpoint disabled' };
    }
    return attempt(options, log, delivery, number, leasedUntil);
  }

  return {
    dispatch,
    process,
    startDispatching: () => {
      options.liveness?.start();
      return dispatcher.start();
    },
  };
}
