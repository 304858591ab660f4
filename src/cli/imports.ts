/**
 * All or nothing: every row is validated first, then all chunks go in one transaction. Not
 * `createMany`: Prisma 7 spends client CPU per row building it (bench/README.md), so each chunk is
 * one tagged `INSERT … SELECT FROM unnest(…)`, a bound array parameter per column.
 */
import { isEmailAddress } from '../shared/email.ts';
import { CONTROL_CHARACTERS_REASON, hasControlCharacters } from '../shared/text.ts';
import type { BillingCycle, InvoiceStatus, ServiceStatus } from '../../generated/prisma/client.ts';
import type { Credentials } from '../db/credentials.ts';
import { CliError, ImportRowError } from './errors.ts';
import { findBrokerBySlug } from './brokers.ts';
import { isUniqueViolation } from '../shared/db-errors.ts';
import { writeWithEvents } from '../events/writes.ts';
import { serviceData, type ShownService } from '../services/present.ts';
import { checkRowShape, type FieldSpec } from './import-file.ts';
import { describe, InvalidValue, parseAmount, parseDateOnly, parsePositiveInt, parseTimestamp } from './values.ts';
import type { ReadClient } from '../shared/db-errors.ts';

export const INVOICE_STATUSES: readonly InvoiceStatus[] = ['paid', 'pending', 'overdue', 'cancelled', 'refunded'];
export const SERVICE_STATUSES: readonly ServiceStatus[] = ['pending', 'active', 'suspended', 'cancelled'];
export const BILLING_CYCLES: readonly BillingCycle[] = ['monthly', 'quarterly', 'annually'];

export const INVOICE_FIELDS: FieldSpec = {
  required: ['number', 'service_number', 'amount', 'currency', 'status', 'date'],
};
export const SERVICE_FIELDS: FieldSpec = {
  required: ['service_number', 'plan', 'status', 'hostname', 'username', 'password'],
  // customer_email defaults to the broker's e-mail, created_at to the time of the import.
  optional: ['created_at', 'customer_email', 'customer_name', 'billing_cycle'],
};

/** Rows per INSERT (each column is one array parameter, so this only bounds statement size). */
export const CHUNK_SIZE = 10_000;
/** One transaction for the whole file, with room to spare. */
const TRANSACTION_OPTIONS = { maxWait: 60_000, timeout: 30 * 60_000 };

export interface ImportResult {
  imported: number;
}

export interface InvoiceRow {
  number: string;
  serviceNumber: number;
  /** Exact decimal string, e.g. "1234.50". */
  amount: string;
  currency: string;
  status: InvoiceStatus;
  date: Date;
}

export interface ServiceRow {
  serviceNumber: number;
  plan: string;
  status: ServiceStatus;
  hostname: string;
  username: string;
  password: string;
  createdAt: Date | undefined;
  customerEmail: string | undefined;
  customerName: string | undefined;
  billingCycle: BillingCycle;
}

/** Runs `parse` on one field, turning its InvalidValue into the row's error. */
function field<T>(row: number, name: string, parse: () => T): T {
  try {
    return parse();
  } catch (e) {
    if (e instanceof InvalidValue) throw new ImportRowError(row, name, e.message);
    throw e;
  }
}

function text(value: unknown, max: number): string {
  if (typeof value === 'number' && Number.isFinite(value)) value = String(value);
  if (typeof value !== 'string') throw new InvalidValue(`must be text, got ${describe(value)}`);
  const t = value.trim();
  if (t.length > max) throw new InvalidValue(`is longer than ${max} characters`);
  if (hasControlCharacters(t)) throw new InvalidValue(CONTROL_CHARACTERS_REASON);
  return t;
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[]): T {
  const t = typeof value === 'string' ? value.trim().toLowerCase() : undefined;
  if (t === undefined || !(allowed as readonly string[]).includes(t)) {
    throw new InvalidValue(`must be one of ${allowed.join(', ')}, got ${describe(value)}`);
  }
  return t as T;
}

const HOSTNAME_RE = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?)*\.?$/;

/** Validates every invoice row (1-based row numbers in errors); duplicates within the file too. */
export function validateInvoiceRows(rows: readonly unknown[]): InvoiceRow[] {
  const out: InvoiceRow[] = [];
  const seen = new Map<string, number>();
  rows.forEach((raw, i) => {
    const row = i + 1;
    const r = checkRowShape(raw, row, INVOICE_FIELDS);
    const number = field(row, 'number', () => text(r.number, 100));
    const earlier = seen.get(number);
    if (earlier !== undefined) throw new ImportRowError(row, 'number', `"${number}" already appears in row ${earlier}`);
    seen.set(number, row);
    const currency = field(row, 'currency', () => {
      const c = text(r.currency, 3);
      if (!/^[A-Za-z]{3}$/.test(c)) throw new InvalidValue(`must be a 3-letter currency code, got ${describe(r.currency)}`);
      return c.toUpperCase();
    });
    out.push({
      number,
      serviceNumber: field(row, 'service_number', () => parsePositiveInt(r.service_number)),
      amount: field(row, 'amount', () => parseAmount(r.amount)),
      currency,
      status: field(row, 'status', () => oneOf(r.status, INVOICE_STATUSES)),
      date: field(row, 'date', () => parseDateOnly(text(r.date, 10))),
    });
  });
  return out;
}

/** A number one of the broker's invoices already uses rejects the file, naming the row. */
export async function importInvoices(prisma: ReadClient, brokerSlug: string, rows: readonly unknown[]): Promise<ImportResult> {
  const broker = await findBrokerBySlug(prisma, brokerSlug);
  const invoices = validateInvoiceRows(rows);
  if (invoices.length === 0) return { imported: 0 };
  try {
    await prisma.$transaction(async (tx) => {
      for (let i = 0; i < invoices.length; i += CHUNK_SIZE) {
        const c = invoices.slice(i, i + CHUNK_SIZE);
        await tx.$executeRaw`
          INSERT INTO "invoices" ("broker_id", "number", "service_number", "amount", "currency", "status", "date")
          SELECT ${broker.id}, t.number, t.service_number, t.amount, t.currency, t.status::"invoice_status", t.date
          FROM unnest(
            ${c.map((x) => x.number)}::text[],
            ${c.map((x) => x.serviceNumber)}::int[],
            ${c.map((x) => x.amount)}::numeric[],
            ${c.map((x) => x.currency)}::text[],
            ${c.map((x) => x.status)}::text[],
            ${c.map((x) => x.date.toISOString().slice(0, 10))}::date[]
          ) AS t(number, service_number, amount, currency, status, date)`;
      }
    }, TRANSACTION_OPTIONS);
  } catch (e) {
    if (!isUniqueViolation(e)) throw e;
    // Rolled back; now say which row clashed.
    const clash = await firstExisting(invoices.map((x) => x.number), (chunk) =>
      prisma.invoice.findFirst({ where: { brokerId: broker.id, number: { in: chunk } }, select: { number: true } }).then((x) => x?.number),
    );
    const row = clash === undefined ? -1 : invoices.findIndex((x) => x.number === clash) + 1;
    if (row > 0) throw new ImportRowError(row, 'number', `broker "${broker.slug}" already has an invoice "${clash}"`);
    throw new CliError('an invoice number in the file clashes with an existing invoice; nothing was imported');
  }
  await refreshStatistics(prisma, 'invoices', invoices.length);
  return { imported: invoices.length };
}

/** Rows imported at once past which the table's planner statistics are refreshed at once. */
const ANALYZE_AFTER_ROWS = 10_000;

/**
 * Until autovacuum gets to a large import, a report's page query is planned for a handful of rows
 * and reads every row after its cursor for each page (quadratic); ANALYZE fixes the statistics now.
 */
async function refreshStatistics(prisma: ReadClient, table: 'invoices' | 'services', imported: number): Promise<void> {
  if (imported < ANALYZE_AFTER_ROWS) return;
  await (table === 'services' ? prisma.$executeRaw`ANALYZE "services"` : prisma.$executeRaw`ANALYZE "invoices"`);
}

async function firstExisting<T>(values: T[], probe: (chunk: T[]) => Promise<T | undefined>): Promise<T | undefined> {
  for (let i = 0; i < values.length; i += CHUNK_SIZE) {
    const hit = await probe(values.slice(i, i + CHUNK_SIZE));
    if (hit !== undefined) return hit;
  }
  return undefined;
}

/** A plan matches its catalogue name (`planNames`) in any case and is stored in the catalogue's spelling. */
export function validateServiceRows(rows: readonly unknown[], planNames: readonly string[]): ServiceRow[] {
  const plans = new Map(planNames.map((p) => [p.toLowerCase(), p]));
  const out: ServiceRow[] = [];
  const seen = new Map<number, number>();
  rows.forEach((raw, i) => {
    const row = i + 1;
    const r = checkRowShape(raw, row, SERVICE_FIELDS);
    const serviceNumber = field(row, 'service_number', () => parsePositiveInt(r.service_number));
    const earlier = seen.get(serviceNumber);
    if (earlier !== undefined) throw new ImportRowError(row, 'service_number', `${serviceNumber} already appears in row ${earlier}`);
    seen.set(serviceNumber, row);
    const plan = field(row, 'plan', () => {
      const name = plans.get(text(r.plan, 100).toLowerCase());
      if (name === undefined) throw new InvalidValue(`must be a catalogue plan (${planNames.join(', ')}), got ${describe(r.plan)}`);
      return name;
    });
    const status = field(row, 'status', () => oneOf(r.status, SERVICE_STATUSES));
    const hostname = field(row, 'hostname', () => {
      const h = text(r.hostname, 253);
      if (!HOSTNAME_RE.test(h)) throw new InvalidValue(`must be a host name, got ${describe(r.hostname)}`);
      return h.toLowerCase();
    });
    const username = field(row, 'username', () => text(r.username, 100));
    const password = field(row, 'password', () => {
      if (typeof r.password !== 'string') throw new InvalidValue('must be text');
      if (r.password.length > 128) throw new InvalidValue('is longer than 128 characters');
      // As the API's password: a CR/LF would reach the e-mail that sends it, and every API answer.
      if (hasControlCharacters(r.password)) throw new InvalidValue(CONTROL_CHARACTERS_REASON);
      return r.password; // kept exactly as given: spaces can be part of a password
    });
    const createdAt =
      r.created_at === undefined
        ? undefined
        : field(row, 'created_at', () => {
            const d = parseTimestamp(text(r.created_at, 40));
            if (d.getTime() > Date.now() + 60_000) throw new InvalidValue('must not be in the future');
            return d;
          });
    const customerEmail =
      r.customer_email === undefined
        ? undefined
        : field(row, 'customer_email', () => {
            const e = text(r.customer_email, 254);
            if (!isEmailAddress(e)) throw new InvalidValue(`must be an e-mail address, got ${describe(r.customer_email)}`);
            return e;
          });
    const customerName = r.customer_name === undefined ? undefined : field(row, 'customer_name', () => text(r.customer_name, 200));
    const billingCycle = r.billing_cycle === undefined ? 'monthly' : field(row, 'billing_cycle', () => oneOf(r.billing_cycle, BILLING_CYCLES));
    out.push({ serviceNumber, plan, status, hostname, username, password, createdAt, customerEmail, customerName, billingCycle });
  });
  return out;
}

/** A service as the import's INSERT returns it: the columns its public shape is made of. */
type InsertedService = Omit<ShownService, 'plan'> & { planId: number };

export interface ImportServicesOptions {
  /** Encrypts the passwords (src/db/credentials.ts, the server's key). */
  credentials: Credentials;
}

/**
 * Service numbers are unique across brokers: one taken rejects the file, naming the row. Each
 * `service.created` event is written in the import's transaction, so a rejected file leaves none.
 */
export async function importServices(
  prisma: ReadClient,
  brokerSlug: string,
  rows: readonly unknown[],
  options: ImportServicesOptions,
): Promise<ImportResult> {
  const broker = await findBrokerBySlug(prisma, brokerSlug);
  const plans = await prisma.plan.findMany({ orderBy: { tier: 'asc' }, select: { id: true, name: true } });
  const services = validateServiceRows(
    rows,
    plans.map((p) => p.name),
  );
  if (services.length === 0) return { imported: 0 };
  const planId = new Map(plans.map((p) => [p.name, p.id]));
  const planName = new Map(plans.map((p) => [p.id, p.name]));
  const now = new Date();
  const encrypted = services.map((s) => options.credentials.encrypt(s.password));
  try {
    await writeWithEvents(prisma, async (tx) => {
      const inserted: InsertedService[] = [];
      for (let i = 0; i < services.length; i += CHUNK_SIZE) {
        const c = services.slice(i, i + CHUNK_SIZE);
        // updated_at is the import time, so a modified_since sync sees them.
        const chunk = await tx.$queryRaw<InsertedService[]>`
          INSERT INTO "services" ("service_number", "broker_id", "plan_id", "status", "hostname", "customer_email",
            "customer_name", "billing_cycle", "username", "password_enc", "created_at", "updated_at")
          SELECT t.service_number, ${broker.id}, t.plan_id, t.status::"service_status", t.hostname, t.customer_email,
            t.customer_name, t.billing_cycle::"billing_cycle", t.username, t.password_enc, t.created_at, ${now}::timestamptz
          FROM unnest(
            ${c.map((x) => x.serviceNumber)}::int[],
            ${c.map((x) => planId.get(x.plan)!)}::int[],
            ${c.map((x) => x.status)}::text[],
            ${c.map((x) => x.hostname)}::text[],
            ${c.map((x) => x.customerEmail ?? broker.email)}::text[],
            ${c.map((x) => x.customerName ?? null)}::text[],
            ${c.map((x) => x.billingCycle)}::text[],
            ${c.map((x) => x.username)}::text[],
            ${encrypted.slice(i, i + CHUNK_SIZE)}::text[],
            ${c.map((x) => (x.createdAt ?? now).toISOString())}::timestamptz[]
          ) AS t(service_number, plan_id, status, hostname, customer_email, customer_name, billing_cycle, username,
            password_enc, created_at)
          RETURNING "service_number" AS "serviceNumber", "plan_id" AS "planId", "status"::text AS "status", "hostname",
            "customer_email" AS "customerEmail", "customer_name" AS "customerName", "billing_cycle"::text AS "billingCycle",
            "created_at" AS "createdAt", "updated_at" AS "updatedAt", "cancel_at" AS "cancelAt", "cancelled_at" AS "cancelledAt"`;
        inserted.push(...chunk);
      }
      // Recorded last (writeWithEvents): the events take the broker's feed lock, held to the end of the transaction.
      return {
        value: undefined,
        events: inserted.map(({ planId: id, ...service }) => ({
          brokerId: broker.id,
          mode: 'live' as const,
          type: 'service.created' as const,
          object: serviceData({ ...service, plan: { name: planName.get(id)! } }),
        })),
        at: now,
      };
    }, TRANSACTION_OPTIONS);
  } catch (e) {
    if (!isUniqueViolation(e)) throw e;
    const clash = await firstExisting(services.map((x) => x.serviceNumber), (chunk) =>
      prisma.service.findFirst({ where: { serviceNumber: { in: chunk } }, select: { serviceNumber: true } }).then((x) => x?.serviceNumber),
    );
    const row = clash === undefined ? -1 : services.findIndex((x) => x.serviceNumber === clash) + 1;
    if (row > 0) throw new ImportRowError(row, 'service_number', `service ${clash} already exists`);
    throw new CliError('a service number in the file clashes with an existing service; nothing was imported');
  }
  await refreshStatistics(prisma, 'services', services.length);
  return { imported: services.length };
}
