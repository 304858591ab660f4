/**
 * How a report reads its rows: the page queries, as plain SQL with `$n` parameters, so that the same
 * text runs through Prisma on the process's thread or through a connection of the build thread's own
 * (build.ts). Nothing here loads Prisma: the build thread imports it.
 */
import { lastOfPage } from './invoice-table.ts';

/** Which rows a build reads: plain data, handed to the build thread as it is. */
export type PageScope =
  | { kind: 'invoices'; brokerId: string; maxId: number; startDate: string; endDate: string }
  | { kind: 'services'; brokerId: string; maxId: number; statusFilter: string | null };

/** One row of a page query's answer: the page's text, its row count, and (services) its last id. */
export interface PageRow {
  page: string | null;
  n: number;
  last_id?: number | null;
}

/** Runs one page query: Prisma's `$queryRawUnsafe` or a `pg` client's `query`. */
export type RunPageQuery = (sql: string, params: unknown[]) => Promise<PageRow[]>;

/** Invoices read per query while the workbook streams (keyset pagination on date, id). */
export const INVOICE_BATCH = 2_000;
/** Services read per query (pagination on id). */
export const SERVICE_BATCH = 10_000;

/** Invoices per row of a page query's answer: each row's text stays a small message (tens of KB). */
export const INVOICE_PART = 250;

/**
 * A line per invoice as invoiceLine (invoice-table.ts) reads it, in (date, id) order: one text per
 * part of a page is several times cheaper through a driver than a row-by-row result, and these
 * lines cheaper to make and to read than JSON (bench/README.md). A page comes as rows of
 * INVOICE_PART lines, in order, rather than one text: node-postgres gathers a message larger than
 * a socket read into ever larger buffers, and a page-long message made about a megabyte of them
 * per page. Paid and pending invoices only (pending is reported as unpaid); ids above the count's
 * snapshot are left out.
 */
const INVOICE_PAGE = `
  SELECT string_agg(q.line, E'\n' ORDER BY q.date, q.id) AS page, count(*)::int AS n
  FROM (SELECT concat_ws(E'\t', p.id, p.date, p.service_number, p.date - DATE '1899-12-30', p.status, p.amount,
                         (p.amount * 100)::bigint, to_json(p.currency::text), to_json(p.number)) AS line,
               p.date, p.id, (row_number() OVER (ORDER BY p.date, p.id) - 1) / $8 AS part
        FROM (SELECT id, number, service_number, date, status, amount, currency FROM invoices
              WHERE broker_id = $1 AND date >= $2::date AND date <= $3::date
                AND status IN ('paid'::invoice_status, 'pending'::invoice_status)
                AND id <= $4 AND (date, id) > ($5::date, $6)
              ORDER BY date, id LIMIT $7) p) q
  GROUP BY q.part ORDER BY q.part`;

/** The services as a JSON array per page (json_agg), in id order; of one status when filtered. */
const servicePage = (filtered: boolean) => `
  SELECT json_agg(p ORDER BY p.id)::text AS page, max(p.id)::int AS last_id, count(*)::int AS n FROM (
    SELECT s.id, s.service_number, pl.name AS plan, s.status::text AS status, s.hostname, s.customer_email,
           s.customer_name, s.billing_cycle::text AS billing_cycle,
           to_char(s.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at
    FROM services s JOIN plans pl ON pl.id = s.plan_id
    WHERE s.broker_id = $1 AND s.id <= $2 AND s.id > $3${filtered ? ' AND s.status = $5::service_status' : ''}
    ORDER BY s.id LIMIT $4) p`;

/** One page of rows: its texts (in order), how many rows, and where the next page starts. */
interface RowPage<K> {
  texts: string[];
  rows: number;
  /** The key after which the next page starts (the last row's); read only when the page is full. */
  after: () => K;
}

/**
 * A report's pages in order, read by keyset pagination (`fetchAfter(key)`, `batch` rows a page),
 * each page's texts yielded while the next page is read. Stops at an empty or short page.
 */
async function* prefetchedPages<K>(first: K, batch: number, fetchAfter: (key: K) => Promise<RowPage<K>>): AsyncGenerator<string> {
  let next: Promise<RowPage<K>> | undefined = fetchAfter(first);
  while (next) {
    const page: RowPage<K> = await next;
    if (page.rows === 0) return;
    next = page.rows === batch ? fetchAfter(page.after()) : undefined;
    // A caller that stops early never awaits the next page: its failure must not go unhandled.
    next?.catch(() => undefined);
    yield* page.texts;
  }
}

/** The pages of the rows `scope` names, each one text (see the queries above), read through `run`. */
export function pagesOf(scope: PageScope, run: RunPageQuery): AsyncGenerator<string> {
  if (scope.kind === 'invoices') {
    const fetchAfter = async (key: { date: string; id: number }): Promise<RowPage<{ date: string; id: number }>> => {
      const parts = (await run(INVOICE_PAGE, [scope.brokerId, scope.startDate, scope.endDate, scope.maxId, key.date, key.id, INVOICE_BATCH, INVOICE_PART])).filter((r) => r.page);
      const rows = parts.reduce((sum, r) => sum + Number(r.n), 0);
      return { texts: parts.map((r) => r.page!), rows, after: () => lastOfPage(parts[parts.length - 1]!.page!) };
    };
    return prefetchedPages({ date: scope.startDate, id: 0 }, INVOICE_BATCH, fetchAfter);
  }
  const sql = servicePage(scope.statusFilter !== null);
  const fetchAfter = async (id: number): Promise<RowPage<number>> => {
    const params: unknown[] = [scope.brokerId, scope.maxId, id, SERVICE_BATCH];
    if (scope.statusFilter !== null) params.push(scope.statusFilter);
    const row = (await run(sql, params))[0];
    const lastId = Number(row?.last_id ?? 0);
    return row?.page ? { texts: [row.page], rows: Number(row.n), after: () => lastId } : { texts: [], rows: 0, after: () => lastId };
  };
  return prefetchedPages(0, SERVICE_BATCH, fetchAfter);
}
