/**
 * The records openapi.yaml's examples name, for the demo broker, so an example-driven tool calling
 * with a live demo key finds what the sandbox shows. Each `demo` run puts back what live calls
 * changed; test/cli/demo-examples.test.ts holds this file and openapi.yaml in step. Every change
 * writes its event; events are never rewritten: the examples' events (fixed ids) are the events of
 * the run that makes the demo broker. Ids are global: one another broker holds is skipped with a
 * note, never taken over.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { Prisma, Plan } from '../../generated/prisma/client.ts';
import type { Credentials } from '../db/credentials.ts';
import { generatePassword } from '../services/generate.ts';
import { formatRequestId } from '../shared/ids.ts';
import { discardOtherBuilds, reportKinds, specOfRun, storeWorkbook, tokenHash } from '../reports/index.ts';
import { lockFeeds, newEventId, type FixedEvent, type NewEvent } from '../events/store.ts';
import { writeWithEventsIn, type WriteTx } from '../events/writes.ts';
import { endpointEvent, pingObject } from '../webhooks/endpoint-store.ts';
import { serviceData, type ServiceWithPlan } from '../services/present.ts';
import { REQUEST_INCLUDE, requestData, type RequestWithRelations } from '../services/change-requests.ts';
import { requestEvent, serviceEvent } from './demo-events.ts';
import { putRequestLogs } from './demo-request-logs.ts';
import type { ReadClient } from '../shared/db-errors.ts';

const at = (iso: string) => new Date(iso);

/** components.parameters.ServiceNumber and every live service example. */
const EXAMPLE_SERVICE = 482913570;
/** The second service the examples name (service-create's and the services list's sandbox answers, the code samples). */
const SECOND_SERVICE = 731845206;
/** The create request 482913570 came from (manage's `approved` answer). */
const CREATE_REQUEST = 43;
/** components.parameters.RequestIdPath: a pending upgrade, created 2025-03-02 (listRequests' query examples). */
const PENDING_REQUEST = 44;
/** components.parameters.ReportId: the completed January invoices report. */
const EXAMPLE_REPORT = '5b0c8a52-31f4-4d7e-9d3c-2f7f1b6f0a11';
/** getReport's `link` answer: the run whose workbook the download example's token fetches. */
const LINK_REPORT = '9a41c3d2-6b7e-4f80-a1b2-c3d4e5f60718';
/** downloadReport's token example: finance@broker.example's link of LINK_REPORT. */
const EXAMPLE_TOKEN = 'q3v9Tz0bWkXc1mH7yR2LpN4sJ8dA6eF5gU0iO3tK9wE';
/** The invoices report's body example (2025-01-01..2025-01-31) and the InvoicesReport example's totals. */
const JANUARY = { paid: 21, pending: 6 };

type Tx = WriteTx;
type PlanOf = (name: string) => Plan;

interface ExampleService {
  number: number;
  hostname: string;
  email: string;
  name: string;
  plan: string;
}

/** components.parameters.DowngradeServiceNumber: a service of its own, on a plan above the example's Basic VPS. */
const DOWNGRADE_SERVICE = 615204387;
/** components.parameters.CancelServiceNumber: a service of its own (a service has one open change request at a time). */
const CANCEL_SERVICE = 508716294;

const SERVICES: ExampleService[] = [
  { number: EXAMPLE_SERVICE, hostname: 'web01.client.example', email: 'ops@client.example', name: 'Client Ltd', plan: 'Standard VPS' },
  { number: SECOND_SERVICE, hostname: 'shop.client.example', email: 'owner@client.example', name: 'Client Ltd', plan: 'Standard VPS' },
  { number: DOWNGRADE_SERVICE, hostname: 'db01.client.example', email: 'ops@client.example', name: 'Client Ltd', plan: 'Professional VPS' },
  { number: CANCEL_SERVICE, hostname: 'mail.client.example', email: 'ops@client.example', name: 'Client Ltd', plan: 'Standard VPS' },
];

interface ExamplesOutcome {
  /** Examples left out because another broker holds their id (one line each). */
  skipped: string[];
}

/** Undefined when another broker has the number. `service.updated` only when what GET shows changed: no event without a change. */
async function putService(tx: Tx, brokerId: string, plan: PlanOf, credentials: Credentials, s: ExampleService, events: NewEvent[]): Promise<number | undefined> {
  const existing = await tx.service.findUnique({ where: { serviceNumber: s.number }, include: { plan: true } });
  if (existing && existing.brokerId !== brokerId) return undefined;
  const shown = {
    planId: plan(s.plan).id,
    status: 'active' as const,
    hostname: s.hostname,
    customerEmail: s.email,
    customerName: s.name,
    billingCycle: 'monthly' as const,
    createdAt: at('2025-03-01T09:30:00.000Z'),
    updatedAt: at('2025-03-02T11:00:00.000Z'),
    cancelAt: null,
    cancelledAt: null,
  };
  if (existing) {
    const updated = await tx.service.update({ where: { id: existing.id }, data: shown, include: { plan: true } });
    if (!isDeepStrictEqual(serviceData(existing), serviceData(updated))) events.push(serviceEvent('service.updated', updated, existing));
    return existing.id;
  }
  const created = await tx.service.create({
    data: { ...shown, serviceNumber: s.number, brokerId, username: 'root', passwordEnc: credentials.encrypt(generatePassword()) },
    include: { plan: true },
  });
  events.push(serviceEvent('service.created', created));
  return created.id;
}

/** Other open requests on the example services are denied, so the examples' calls can make theirs. */
async function closeOtherRequests(tx: Tx, serviceIds: number[], now: Date, events: NewEvent[]): Promise<void> {
  // Read first, so each event can say what the denial changed; the update re-checks the status.
  const open = await tx.serviceRequest.findMany({
    where: { serviceId: { in: serviceIds }, status: { in: ['pending', 'provider_review'] }, id: { notIn: [CREATE_REQUEST, PENDING_REQUEST] } },
    include: REQUEST_INCLUDE,
  });
  if (open.length === 0) return;
  const denied = await tx.serviceRequest.updateManyAndReturn({
    where: { id: { in: open.map((r) => r.id) }, status: { in: ['pending', 'provider_review'] } },
    data: { status: 'denied', denialReason: 'Closed by the demo command: the contract examples start from no open request', decidedAt: now, updatedAt: now },
    select: { id: true },
  });
  if (denied.length === 0) return;
  const before = new Map(open.map((r) => [r.id, r]));
  const decided = await tx.serviceRequest.findMany({ where: { id: { in: denied.map((r) => r.id) } }, include: REQUEST_INCLUDE, orderBy: { id: 'asc' } });
  events.push(...decided.map((r) => requestEvent('request.denied', r, before.get(r.id)!)));
}

/**
 * A request with the example's id; false when another broker has that id. New, or put back (an
 * integrator decided it), it is told as `request.created` with the request as GET then shows it:
 * no event type tells of a reopening, and a mirror kept from the events must show it pending.
 */
async function putRequest(
  tx: Tx,
  brokerId: string,
  id: number,
  data: Omit<Prisma.ServiceRequestUncheckedCreateInput, 'id' | 'brokerId'>,
  events: NewEvent[],
): Promise<boolean> {
  const existing = await tx.serviceRequest.findUnique({ where: { id }, include: REQUEST_INCLUDE });
  if (existing && existing.brokerId !== brokerId) return false;
  if (existing) {
    const put = await tx.serviceRequest.update({ where: { id }, data, include: REQUEST_INCLUDE });
    if (!isDeepStrictEqual(requestData(existing), requestData(put))) events.push(requestEvent('request.created', put));
    return true;
  }
  // Relations only when shown: Prisma loads them concurrently, and pg warns of concurrent queries in a transaction.
  events.push(requestEvent('request.created', await tx.serviceRequest.create({ data: { ...data, id, brokerId }, include: REQUEST_INCLUDE })));
  return true;
}

const CLEAR_DECISION = { reason: null, cancelWhen: null, denialReason: null, apiKeyId: null };

async function putRequests(tx: Tx, brokerId: string, plan: PlanOf, ids: { example?: number; second?: number }, skipped: string[], events: NewEvent[]): Promise<void> {
  if (ids.example !== undefined) {
    const create = await putRequest(tx, brokerId, CREATE_REQUEST, {
      ...CLEAR_DECISION, serviceId: ids.example, type: 'create', status: 'approved', source: 'api', currentPlanId: null, requestedPlanId: plan('Standard VPS').id,
      hostname: 'web01.client.example', customerEmail: 'ops@client.example', customerName: 'Client Ltd', billingCycle: 'monthly',
      createdAt: at('2025-03-01T09:30:00.000Z'), updatedAt: at('2025-03-02T12:00:00.000Z'), decidedAt: at('2025-03-02T12:00:00.000Z'),
    }, events);
    if (!create) skipped.push(`${formatRequestId(CREATE_REQUEST)}: another broker's request has that id`);
  }
  // Not on EXAMPLE_SERVICE: a pending request there would turn its upgrade, downgrade and
  // cancellation examples into 409s (one open request per service).
  if (ids.second !== undefined) {
    const pending = await putRequest(tx, brokerId, PENDING_REQUEST, {
      ...CLEAR_DECISION, serviceId: ids.second, type: 'upgrade', status: 'pending', source: 'api', currentPlanId: plan('Standard VPS').id, requestedPlanId: plan('Professional VPS').id,
      hostname: 'shop.client.example', customerEmail: 'owner@client.example', customerName: 'Client Ltd', billingCycle: 'monthly',
      createdAt: at('2025-03-02T11:00:00.000Z'), updatedAt: at('2025-03-02T11:00:00.000Z'), decidedAt: null,
    }, events);
    if (!pending) skipped.push(`${formatRequestId(PENDING_REQUEST)}: another broker's request has that id`);
  }
  // Explicit ids leave the id sequence behind them: it moves past them, so no later request collides.
  await tx.$executeRaw`
    SELECT setval('service_requests_id_seq', m) FROM (SELECT MAX(id) AS m FROM service_requests) AS t
    WHERE m >= (SELECT last_value FROM service_requests_id_seq)`;
}

/** The invoices of the report examples' January 2025 (the InvoicesReport example's 21 paid and 6 unpaid), over the example services. */
async function putInvoices(tx: Tx, brokerId: string, plan: PlanOf): Promise<void> {
  const data: Prisma.InvoiceCreateManyInput[] = [];
  for (let i = 0; i < JANUARY.paid + JANUARY.pending; i++) {
    data.push({
      brokerId,
      number: `EX-202501-${String(i + 1).padStart(4, '0')}`,
      serviceNumber: [EXAMPLE_SERVICE, SECOND_SERVICE][i % 2]!,
      amount: plan('Standard VPS').monthlyPrice,
      currency: 'USD',
      status: i < JANUARY.paid ? 'paid' : 'pending',
      date: at(`2025-01-${String(i + 1).padStart(2, '0')}`),
    });
  }
  await tx.invoice.createMany({ data, skipDuplicates: true });
}

interface ExampleRun {
  id: string;
  range: [string, string];
  createdAt: string;
  completedAt: string;
  delivery: 'attachment' | 'link';
  recipients: Array<{ email: string; sentAt: string }>;
}

const RUNS: ExampleRun[] = [
  {
    id: EXAMPLE_REPORT, range: ['2025-01-01', '2025-01-31'], createdAt: '2025-03-02T12:00:00.000Z', completedAt: '2025-03-02T12:00:02.250Z', delivery: 'attachment',
    recipients: [{ email: 'finance@broker.example', sentAt: '2025-03-02T12:00:02.200Z' }],
  },
  {
    id: LINK_REPORT, range: ['2024-01-01', '2024-12-31'], createdAt: '2025-03-02T12:00:00.000Z', completedAt: '2025-03-02T12:00:09.400Z', delivery: 'link',
    recipients: [
      { email: 'finance@broker.example', sentAt: '2025-03-02T12:00:09.100Z' },
      { email: 'ops@broker.example', sentAt: '2025-03-02T12:00:09.300Z' },
    ],
  },
];

/** A completed invoices run as the pipeline leaves it (an attached workbook is deleted once sent); false when another broker has the id. */
async function putRun(tx: Tx, brokerId: string, run: ExampleRun): Promise<boolean> {
  const existing = await tx.reportRun.findUnique({ where: { id: run.id }, select: { brokerId: true } });
  if (existing && existing.brokerId !== brokerId) return false;
  if (existing) return true; // recorded with its recipients: a run's record is never changed by a call
  const [start, end] = run.range;
  const totals = await tx.$queryRaw<Array<{ paid: number; pending: number; max_id: number | null }>>`
    SELECT count(*) FILTER (WHERE status = 'paid')::int AS paid, count(*) FILTER (WHERE status = 'pending')::int AS pending, max(id)::int AS max_id
    FROM invoices WHERE broker_id = ${brokerId} AND date >= ${start}::date AND date <= ${end}::date AND status IN ('paid', 'pending')`;
  const t = totals[0]!;
  await tx.reportRun.create({
    data: {
      id: run.id, brokerId, reportType: 'invoices', startDate: at(start), endDate: at(end),
      totals: { total_invoices: t.paid + t.pending, paid_invoices: t.paid, unpaid_invoices: t.pending },
      snapshotMaxId: t.max_id ?? 0, generatedAt: at(run.createdAt), status: 'completed', recipientsSent: run.recipients.length, recipientsFailed: 0,
      createdAt: at(run.createdAt), completedAt: at(run.completedAt), delivery: run.delivery,
      workbookDeletedAt: run.delivery === 'attachment' ? at(run.completedAt) : null,
      recipients: {
        create: run.recipients.map((r) => ({ email: r.email, status: 'sent' as const, attempts: 1, sentAt: at(r.sentAt), messageId: `<${run.id}.${r.email}@demo>` })),
      },
    },
  });
  return true;
}

/** The example token, renewed for the server's link lifetime on every `demo` run. */
async function putLink(tx: Tx, linkTtlHours: number, now: Date): Promise<void> {
  const recipients = await tx.reportRecipient.findMany({ where: { reportRunId: LINK_REPORT }, orderBy: { id: 'asc' } });
  const expiresAt = new Date(now.getTime() + linkTtlHours * 3600_000);
  for (const r of recipients) await tx.reportRecipient.update({ where: { id: r.id }, data: { linkExpiresAt: expiresAt } });
  const finance = recipients[0]!;
  const hash = tokenHash(EXAMPLE_TOKEN);
  const existing = await tx.reportLink.findUnique({ where: { tokenHash: hash } });
  await tx.reportLink.upsert({ where: { tokenHash: hash }, create: { tokenHash: hash, reportRunId: LINK_REPORT, recipientId: finance.id, expiresAt }, update: { expiresAt } });
  if (!existing) {
    await tx.reportDownload.createMany({
      data: [
        { recipientId: finance.id, tokenHash: hash, ip: '2001:db8:5::17', downloadedAt: at('2025-03-02T12:05:40.020Z') },
        { recipientId: finance.id, tokenHash: hash, ip: '198.51.100.23', downloadedAt: at('2025-03-03T08:15:02.310Z') },
      ],
    });
  }
}

/** The link run's workbook, built by the report build and stored, unless one is stored already. */
async function putLinkWorkbook(prisma: ReadClient): Promise<void> {
  const run = await prisma.reportRun.findUniqueOrThrow({ where: { id: LINK_REPORT } });
  if (run.workbookBuild !== null && run.workbookDeletedAt === null) return;
  const build = randomUUID();
  const input = reportKinds.invoices.input(specOfRun(run), { maxId: run.snapshotMaxId }, run.generatedAt);
  const { stored } = await storeWorkbook({ prisma }, input, { runId: run.id, build, keepUpTo: 0 });
  await prisma.reportRun.update({
    where: { id: run.id },
    data: { workbookBuild: stored.build, workbookBytes: stored.bytes, workbookChunks: stored.chunks, workbookSha256: stored.sha256, workbookDeletedAt: null },
  });
  await discardOtherBuilds(prisma, run.id, stored.build);
}

/** components.parameters.WebhookEndpointIdPath and every endpoint example (all `mode: live`). */
const EXAMPLE_ENDPOINT = 'we_4bK9xT2mQ7vR1nL8pZ3cY6dW';
/**
 * The endpoint examples' URL: a public address (any server registers it, no DNS needed) in IPv6
 * space the IETF keeps unassigned (4000::/2), so no delivery reaches anyone.
 */
const EXAMPLE_ENDPOINT_URL = 'https://[4000::1]/capi';
/** Enabled, the example endpoint would be owed every live change, each retried for a day against an address that reaches no one. */
const DEMO_DISABLED_REASON = 'disabled by the demo command: its address, 4000::1, reaches no receiver';

/** The examples' events (getEvent's and listEvents'), by what they tell of: each the event of its record's creation in the run that makes the demo broker. */
const EXAMPLE_EVENTS = {
  /** `service.created` of EXAMPLE_SERVICE. */
  service: 'evt_2Jf8Kq1Vx9Lm4Tb7Rc3Np6Zs',
  /** `request.created` of PENDING_REQUEST. */
  request: 'evt_5Rt1Mz8Kq3Vn6Lb9Xc2Hd7Wp',
  /** A `ping` of the example endpoint. */
  ping: 'evt_9Wd3Hn6Qy1Kc8Vr2Lm5Tb4Xp',
} as const;

/** The examples' event ids, oldest first. */
export const EXAMPLE_EVENT_IDS: readonly string[] = [EXAMPLE_EVENTS.service, EXAMPLE_EVENTS.request, EXAMPLE_EVENTS.ping];

/**
 * How long before the first run its examples' events are dated (the ping a little later): long
 * enough that the example delivery's attempts (DELIVERED_AFTER_MS) all lie before the run.
 */
const EXAMPLES_MINUTES_AGO = 10;
const PING_MINUTES_AGO = 4;

/** getEvent's `delivered` example: evt_2Jf8…'s delivery to the example endpoint, on its third attempt (ms after the event). */
const DELIVERED_ATTEMPTS = [
  { number: 1, afterMs: 120, statusCode: 500, error: null, durationMs: 84, responseExcerpt: '{"error":"database unavailable"}' },
  { number: 2, afterMs: 5_310, statusCode: null, error: 'timeout after 15000 ms', durationMs: 15_000, responseExcerpt: null },
  { number: 3, afterMs: 306_020, statusCode: 200, error: null, durationMs: 61, responseExcerpt: 'ok' },
];
/** The example delivery's id (`listWebhookEndpointDeliveries`' examples): the service.created event's to the example endpoint. */
const EXAMPLE_DELIVERY = 'whd_7c2e9a4f1b8d4e6a9f3c5b1d7e2a8c40';
const DELIVERED_AFTER_MS = 306_081;

/**
 * Disabled (DEMO_DISABLED_REASON), its secret kept from the first run; deliveries still owed are
 * given up so nothing retries an address that reaches no one. False when another broker or mode has the id.
 */
async function putEndpoint(tx: Tx, brokerId: string, credentials: Credentials, now: Date, events: NewEvent[]): Promise<boolean> {
  const existing = await tx.webhookEndpoint.findUnique({ where: { id: EXAMPLE_ENDPOINT } });
  if (existing && (existing.brokerId !== brokerId || existing.mode !== 'live')) return false;
  const shown = {
    url: EXAMPLE_ENDPOINT_URL, description: 'Order system', events: [], status: 'disabled' as const, disabledReason: DEMO_DISABLED_REASON,
    previousSecret: null, previousSecretExpiresAt: null, lastSuccessAt: null, lastFailureAt: null, failingSince: null, consecutiveFailures: 0,
    createdAt: at('2025-03-01T09:00:00.000Z'), updatedAt: at('2025-03-01T09:00:00.000Z'),
  };
  const after = await tx.webhookEndpoint.upsert({
    where: { id: EXAMPLE_ENDPOINT },
    create: { ...shown, id: EXAMPLE_ENDPOINT, brokerId, mode: 'live', secret: credentials.encrypt(`whsec_${randomBytes(32).toString('base64')}`) },
    update: shown,
  });
  shownChange(events, endpointEvent({ brokerId, mode: 'live' }, { before: existing, after }, now));
  await giveUpDeliveries(tx, { endpointId: EXAMPLE_ENDPOINT }, now);
  return true;
}

/** Delivery figures: told by no event (openapi.yaml, "Receiving webhooks"); putEvents sets the example's again. */
const DELIVERY_FIGURES = new Set(['last_success_at', 'last_failure_at', 'failing_since', 'consecutive_failures']);

/** An endpoint's event, unless the demo put back what the endpoint showed already, delivery figures aside. */
function shownChange(events: NewEvent[], event: NewEvent): void {
  if (event.type === 'webhook_endpoint.updated') {
    const changed = Object.entries(event.previousAttributes ?? {}).filter(([field]) => !DELIVERY_FIGURES.has(field));
    if (changed.length === 0) return;
    event.previousAttributes = Object.fromEntries(changed);
  }
  events.push(event);
}

/** Endpoints the create example made at the examples' URL: enabled, each would collect failing deliveries. */
async function disableOtherExampleEndpoints(tx: Tx, brokerId: string, now: Date, events: NewEvent[]): Promise<void> {
  const where = { brokerId, url: EXAMPLE_ENDPOINT_URL, id: { not: EXAMPLE_ENDPOINT } };
  for (const before of await tx.webhookEndpoint.findMany({ where: { ...where, status: 'enabled' } })) {
    const after = await tx.webhookEndpoint.update({ where: { id: before.id }, data: { status: 'disabled', disabledReason: DEMO_DISABLED_REASON, updatedAt: now } });
    shownChange(events, endpointEvent({ brokerId, mode: before.mode }, { before, after }, now));
  }
  await giveUpDeliveries(tx, { endpoint: where }, now);
}

/** Pending deliveries end as failed, as a disabled endpoint's do. */
async function giveUpDeliveries(tx: Tx, where: Prisma.WebhookDeliveryWhereInput, now: Date): Promise<void> {
  await tx.webhookDelivery.updateMany({ where: { ...where, status: 'pending' }, data: { status: 'failed', nextAttemptAt: null, leasedUntil: null, completedAt: now } });
}

/** The fixed id of an example's event, if `event` is the creation an example names. */
function exampleIdOf(event: NewEvent): string | undefined {
  const object = event.object as { service_number?: number; request_id?: string };
  if (event.type === 'service.created' && object.service_number === EXAMPLE_SERVICE) return EXAMPLE_EVENTS.service;
  if (event.type === 'request.created' && object.request_id === formatRequestId(PENDING_REQUEST)) return EXAMPLE_EVENTS.request;
  return undefined;
}

/**
 * The first run's events, dated minutes before it (the demo broker's feed is empty, so nothing goes
 * back along it) and the examples' with their fixed ids; a fixed id another broker or mode holds is
 * left out with a note (`taken`). `ping`: the example endpoint was made, so its example ping is written.
 */
async function firstEvents(tx: Tx, brokerId: string, events: NewEvent[], ping: boolean, now: Date): Promise<{ events: FixedEvent[]; taken: string[] }> {
  const wished = (minutes: number) => new Date(now.getTime() - minutes * 60_000);
  const fixed: FixedEvent[] = events.map((e) => ({ ...e, id: exampleIdOf(e) ?? newEventId(), wishedAt: wished(EXAMPLES_MINUTES_AGO) }));
  if (ping) fixed.push({ brokerId, mode: 'live', type: 'ping', object: pingObject(EXAMPLE_ENDPOINT), id: EXAMPLE_EVENTS.ping, wishedAt: wished(PING_MINUTES_AGO) });
  const taken = new Set((await tx.event.findMany({ where: { id: { in: [...EXAMPLE_EVENT_IDS] } }, select: { id: true } })).map((e) => e.id));
  const written = fixed.filter((e) => !(taken.has(e.id) && e.type === 'ping')).map((e) => (taken.has(e.id) ? { ...e, id: newEventId() } : e));
  return { events: written, taken: [...taken] };
}

/**
 * getEvent's `delivered` example: the example `service.created`'s delivery to the example endpoint,
 * unless it is there. Dated after its event, and only once all of it lies before `now`.
 */
async function putExampleDelivery(tx: Tx, brokerId: string, now: Date): Promise<void> {
  if (await tx.webhookDelivery.findUnique({ where: { publicId: EXAMPLE_DELIVERY }, select: { id: true } })) return;
  const event = await tx.event.findFirst({ where: { id: EXAMPLE_EVENTS.service, brokerId, mode: 'live' }, select: { createdAt: true } });
  if (!event || event.createdAt.getTime() + DELIVERED_AFTER_MS > now.getTime()) return;
  const after = (ms: number) => new Date(event.createdAt.getTime() + ms);
  await tx.webhookDelivery.create({
    data: {
      publicId: EXAMPLE_DELIVERY, eventId: EXAMPLE_EVENTS.service, endpointId: EXAMPLE_ENDPOINT, status: 'delivered', attempts: DELIVERED_ATTEMPTS.length, nextAttemptAt: null,
      createdAt: event.createdAt, completedAt: after(DELIVERED_AFTER_MS),
      attemptsMade: { create: DELIVERED_ATTEMPTS.map(({ afterMs, ...a }) => ({ ...a, attemptedAt: after(afterMs) })) },
    },
  });
  await tx.webhookEndpoint.update({ where: { id: EXAMPLE_ENDPOINT }, data: { lastSuccessAt: after(DELIVERED_AFTER_MS), updatedAt: at('2025-03-01T09:00:00.000Z') } });
}

/** The demo's sample records, as created: their creations are the first run's last events. */
export interface DemoSamples {
  services: ServiceWithPlan[];
  requests: RequestWithRelations[];
}

/** A demo broker still to make: made in the examples' transaction, its sample data written after them. */
export interface NewDemoBroker {
  create(tx: Tx): Promise<string>;
  samples(tx: Tx, brokerId: string): Promise<DemoSamples>;
}

/**
 * Safe to repeat: nothing is duplicated, and what the examples' live calls changed is put back,
 * each change with its event. `broker`: the demo broker's id, or one to make first. Two changes in
 * one transaction: the example delivery names the first one's example event, so it follows them.
 */
export async function putContractExamples(
  prisma: ReadClient,
  broker: string | NewDemoBroker,
  options: { credentials: Credentials; linkTtlHours: number; now: Date },
): Promise<ExamplesOutcome> {
  const skipped: string[] = [];
  const linkRun = await prisma.$transaction(async (outer) => {
    const put = await writeWithEventsIn(outer, async (tx) => {
      const brokerId = typeof broker === 'string' ? broker : await broker.create(tx);
      const plans = new Map((await tx.plan.findMany()).map((p) => [p.name, p]));
      const plan = (name: string) => {
        const p = plans.get(name);
        if (!p) throw new Error(`plan catalogue is missing "${name}" (are the migrations applied?)`);
        return p;
      };
      const ids: { example?: number; second?: number } = {};
      const serviceIds: number[] = [];
      const events: NewEvent[] = [];
      for (const s of SERVICES) {
        const id = await putService(tx, brokerId, plan, options.credentials, s, events);
        if (id === undefined) {
          skipped.push(`service ${s.number}: another broker's service has that number`);
          continue;
        }
        serviceIds.push(id);
        if (s.number === EXAMPLE_SERVICE) ids.example = id;
        if (s.number === SECOND_SERVICE) ids.second = id;
      }
      await closeOtherRequests(tx, serviceIds, options.now, events);
      await putRequests(tx, brokerId, plan, ids, skipped, events);
      await putInvoices(tx, brokerId, plan);
      let linkRunOk = false;
      for (const run of RUNS) {
        const ok = await putRun(tx, brokerId, run);
        if (!ok) skipped.push(`report ${run.id}: another broker's report run has that id`);
        else if (run.id === LINK_REPORT) linkRunOk = true;
      }
      if (linkRunOk) await putLink(tx, options.linkTtlHours, options.now);
      // The feeds' lock before any endpoint row, as every endpoint change takes them (src/webhooks/endpoint-store.ts).
      await lockFeeds(tx, [{ brokerId, mode: 'live' }, { brokerId, mode: 'test' }]);
      const endpointBefore = await tx.webhookEndpoint.findUnique({ where: { id: EXAMPLE_ENDPOINT }, select: { id: true } });
      const endpoint = await putEndpoint(tx, brokerId, options.credentials, options.now, events);
      if (!endpoint) skipped.push(`webhook endpoint ${EXAMPLE_ENDPOINT}: another broker or mode has that id`);
      await disableOtherExampleEndpoints(tx, brokerId, options.now, events);
      // A first run's events are its records' creations, the examples' with their fixed ids, then the sample data's.
      const first =
        typeof broker === 'string'
          ? undefined
          : { ...(await firstEvents(tx, brokerId, events, endpoint && !endpointBefore, options.now)), samples: await broker.samples(tx, brokerId) };
      skipped.push(...(first?.taken ?? []).map((id) => `event ${id}: another broker or mode has that id`));
      // Recorded last, after the example endpoints are disabled: nothing is owed to an address that reaches no one.
      return {
        value: { brokerId, endpoint, linkRunOk },
        events: first
          ? [...first.events, ...first.samples.services.map((x) => serviceEvent('service.created', x)), ...first.samples.requests.map((r) => requestEvent('request.created', r))]
          : events,
        at: options.now,
      };
    });
    // The example delivery and request log: a delivery figure and log rows, told by no event.
    return writeWithEventsIn(outer, async (tx) => {
      if (put.endpoint) await putExampleDelivery(tx, put.brokerId, options.now);
      await putRequestLogs(tx, put.brokerId, options.now);
      return { value: put.linkRunOk, events: [] };
    });
  }, { maxWait: 30_000, timeout: 60_000 });
  if (linkRun) await putLinkWorkbook(prisma);
  return { skipped };
}
