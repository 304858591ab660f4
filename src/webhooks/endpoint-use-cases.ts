/**
 * The webhook endpoint operations in the domain's words. Sandbox endpoints are real rows of mode
 * `test` (they receive the sandbox's test-mode events), so live and sandbox share this one
 * implementation, each bound to its mode: a key only ever sees its own mode's endpoints.
 */
import dns from 'node:dns';
import type { components } from '../../generated/api.ts';
import type { Credentials } from '../db/credentials.ts';
import { EVENT_RETENTION_DAYS, EVENT_TYPES, type EventMode, type EventType } from '../events/store.ts';
import { storedEventData } from '../events/use-cases.ts';
import type { Caller } from '../shared/caller.ts';
import { isoInstant } from '../shared/dates.ts';
import { InvalidValueError } from '../shared/errors.ts';
import { pageOf, type Page } from '../shared/page.ts';
import type { StatsRange } from '../shared/stats-range.ts';
import { DestinationRefusedError, resolveAndCheck, type DestinationPolicy, type ResolveAll } from './destination.ts';
import {
  createEndpoint,
  deleteEndpoint,
  findEndpoint,
  listEndpoints,
  recordPing,
  recoverFailedDeliveries,
  rotateSecret,
  updateEndpoint,
  type EndpointChange,
  type EndpointScope,
} from './endpoint-store.ts';
import { endpointData, type EndpointData } from './endpoint-data.ts';
import { listDeliveries, type DeliveryPage, type DeliveryQuery } from './endpoint-deliveries.ts';
import { endpointStats, type EndpointStatsData } from './endpoint-stats.ts';
import { recordExample, type EventExamples } from './examples.ts';
import { newEndpointSecret } from './secrets.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export type { EndpointData };
export type EndpointWithSecret = components['schemas']['WebhookEndpointWithSecret'];
export type DeletedEndpoint = components['schemas']['WebhookEndpointDeleted'];
export type EventData = components['schemas']['Event'];
export type RecoveryData = components['schemas']['WebhookRecovery'];

export interface EndpointInput {
  url: string;
  events: string[];
  description: string | null;
}

export interface WebhookEndpointUseCases {
  create(caller: Caller, input: EndpointInput): Promise<EndpointWithSecret>;
  list(caller: Caller, page: { limit: number; offset: number }): Promise<Page<EndpointData>>;
  get(caller: Caller, id: string): Promise<EndpointData>;
  update(caller: Caller, id: string, change: EndpointChange): Promise<EndpointData>;
  remove(caller: Caller, id: string): Promise<DeletedEndpoint>;
  rotateSecret(caller: Caller, id: string): Promise<EndpointWithSecret>;
  ping(caller: Caller, id: string): Promise<EventData>;
  /** Queues again the endpoint's deliveries that ended failed at or after `since` (checkSince). */
  recover(caller: Caller, id: string, since: Date): Promise<RecoveryData>;
  /** The endpoint's deliveries, newest first. */
  deliveries(caller: Caller, id: string, query: DeliveryQuery): Promise<Omit<DeliveryPage, 'success'>>;
  /** The contract's example event of `type`, recorded for this endpoint only (as `ping`). */
  sendExample(caller: Caller, id: string, type: EventType): Promise<EventData>;
  /** The endpoint's deliveries per hour or day of the range. */
  stats(caller: Caller, id: string, range: StatsRange): Promise<EndpointStatsData>;
}

export interface EndpointDeps {
  prisma: ReadClient;
  credentials: () => Promise<Credentials>;
  /** Where webhooks may go (WEBHOOK_ALLOW_PRIVATE_URLS). */
  destinations: DestinationPolicy;
  /** DNS for the registration check; replaceable in tests. */
  resolve?: ResolveAll;
  /** Endpoints one broker may have in each mode (WEBHOOK_ENDPOINTS_PER_BROKER). */
  endpointsPerBroker: number;
  /** Each event type's example (`sendExampleEvent`), from the contract (examples.ts). */
  examples: EventExamples;
}

/** `events` as given, every entry a known type, each once. */
export function checkEventTypes(events: string[]): string[] {
  const known: readonly string[] = EVENT_TYPES;
  const unknown = events.find((e) => !known.includes(e));
  if (unknown !== undefined) {
    throw new InvalidValueError('events', 'body', 'enum', `unknown event type ${JSON.stringify(unknown)}; the types are ${EVENT_TYPES.join(', ')}`);
  }
  return [...new Set(events)];
}

/**
 * The instant `since` names, if recover may go back to it: not before the EVENT_RETENTION_DAYS that
 * events (and their deliveries) are kept, and not after `now`; `400 invalid_parameter` naming
 * `since` otherwise (`rule: retention` or `future`), before any key is taken or row read.
 */
export function checkSince(text: string, now: Date): Date {
  const since = isoInstant(text);
  if (since === undefined) throw new InvalidValueError('since', 'body', 'format', 'must match format "date-time"');
  const earliest = new Date(now.getTime() - EVENT_RETENTION_DAYS * 86_400_000);
  if (since < earliest) {
    const reason = `must be within the ${EVENT_RETENTION_DAYS} days events are kept, at or after ${earliest.toISOString()}; older deliveries were deleted with their events`;
    throw new InvalidValueError('since', 'body', 'retention', reason);
  }
  if (since > now) throw new InvalidValueError('since', 'body', 'future', `must not be in the future (the server's time is ${now.toISOString()})`);
  return since;
}

/** How long registration waits for DNS before it takes the host as not resolving (yet). */
const REGISTRATION_LOOKUP_MS = 5000;

/** dns.lookup, failing with ETIMEOUT after `ms`: a slow resolver must not hold the request for long. */
function boundedLookup(ms: number): ResolveAll {
  return (hostname, options, callback) => {
    let done = false;
    const timer = setTimeout(() => {
      done = true;
      callback(Object.assign(new Error(`DNS look-up of ${hostname} took over ${ms} ms`), { code: 'ETIMEOUT' }), []);
    }, ms);
    dns.lookup(hostname, options, (error, addresses) => {
      if (done) return;
      clearTimeout(timer);
      callback(error, addresses);
    });
  };
}

/**
 * The URL as parsed (host lower-cased, default port dropped, …: what deliveries reach), if the
 * policy lets webhooks go there (src/webhooks/destination.ts); `400 invalid_parameter` naming `url`
 * otherwise. A host name must resolve now (within REGISTRATION_LOOKUP_MS), every address of it
 * allowed: one that does not could be made to resolve anywhere later, and every delivery to it
 * would fail. Every delivery checks the addresses again when it connects.
 */
export async function checkUrl(url: string, deps: Pick<EndpointDeps, 'destinations' | 'resolve'>): Promise<string> {
  try {
    return (await resolveAndCheck(url, deps.destinations, deps.resolve ?? boundedLookup(REGISTRATION_LOOKUP_MS))).href;
  } catch (err) {
    if (err instanceof DestinationRefusedError) throw new InvalidValueError('url', 'body', 'destination', err.message);
    throw err;
  }
}

export function webhookEndpoints(deps: EndpointDeps, mode: EventMode): WebhookEndpointUseCases {
  const { prisma } = deps;
  const scope = (caller: Caller): EndpointScope => ({ brokerId: caller.brokerId, mode });
  /** A new secret: shown once in the answer, stored only encrypted. */
  const newSecret = async () => {
    const secret = newEndpointSecret();
    return { secret, stored: (await deps.credentials()).encrypt(secret) };
  };
  return {
    async create(caller, input) {
      const { secret, stored } = await newSecret();
      const row = await createEndpoint(prisma, scope(caller), { ...input, secret: stored }, caller.unitOfWork, new Date(), deps.endpointsPerBroker);
      return { ...endpointData(row), secret };
    },
    async list(caller, page) {
      const { rows, total } = await listEndpoints(prisma, scope(caller), page);
      return pageOf(rows.map((row) => endpointData(row)), total, page.limit, page.offset);
    },
    async get(caller, id) {
      return endpointData(await findEndpoint(prisma, scope(caller), id));
    },
    async update(caller, id, change) {
      return endpointData(await updateEndpoint(prisma, scope(caller), id, change, caller.unitOfWork, new Date()));
    },
    async remove(caller, id) {
      return { ...endpointData(await deleteEndpoint(prisma, scope(caller), id, caller.unitOfWork, new Date())), deleted: true };
    },
    async rotateSecret(caller, id) {
      const { secret, stored } = await newSecret();
      return { ...endpointData(await rotateSecret(prisma, scope(caller), id, stored, caller.unitOfWork, new Date())), secret };
    },
    async ping(caller, id) {
      const eventId = await recordPing(prisma, scope(caller), id, caller.unitOfWork, new Date());
      return storedEventData(prisma, scope(caller), eventId);
    },
    async recover(caller, id, since) {
      const { queued, hasMore } = await recoverFailedDeliveries(prisma, scope(caller), id, since, caller.unitOfWork);
      return { object: 'webhook_recovery', endpoint_id: id, since: since.toISOString(), queued, has_more: hasMore };
    },
    async deliveries(caller, id, query) {
      return listDeliveries(prisma, scope(caller), id, query);
    },
    async sendExample(caller, id, type) {
      const eventId = await recordExample(prisma, scope(caller), id, type, deps.examples, caller.unitOfWork, new Date());
      return storedEventData(prisma, scope(caller), eventId);
    },
    async stats(caller, id, range) {
      return endpointStats(prisma, scope(caller), id, range);
    },
  };
}
