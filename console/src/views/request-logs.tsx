/**
 * "Request logs": the API's own log of the broker's requests, its volume and errors over time
 * (getRequestStats), filtered or searched by request id, each entry with its error in full. The
 * filters and the open entry are the URL's, so a failed call can be sent as a link.
 */
import { useState } from 'preact/hooks';
import { api, type Schemas } from '../api.ts';
import { percentOf, TimeChart } from '../chart.tsx';
import { useQuery } from '../router.ts';
import {
  Badge, CopyText, isoFromLocal, Json, localFromIso, Pager, ProblemNote, SplitView, TableWrap, Time, useCursor, useLoad, useOpenEntry, ViewHeading,
} from '../ui.tsx';

type Entry = Schemas['RequestLog'];

/** The filters as the URL holds them: times in UTC (ISO), so a link means the same in any time zone. */
interface Filters {
  status: string;
  operation: string;
  /** A key's id (`key_…`) or its name. */
  key: string;
  requestId: string;
  from: string;
  to: string;
}

const FIELDS: Record<keyof Filters, string> = { status: 'status', operation: 'operation', key: 'key', requestId: 'request_id', from: 'from', to: 'to' };

export function RequestLogs() {
  const query = useQuery();
  const filters = Object.fromEntries(Object.entries(FIELDS).map(([k, field]) => [k, query.get(field)])) as unknown as Filters;
  const entry = useOpenEntry();
  const apply = (next: Filters) => query.set({ ...Object.fromEntries(Object.entries(FIELDS).map(([k, field]) => [field, next[k as keyof Filters]])), open: undefined });
  return (
    <section aria-labelledby="view-title">
      <ViewHeading><span id="view-title">Request logs</span></ViewHeading>
      <SplitView
        open={entry.open}
        onBack={entry.close}
        list={
          <>
            <p class="lede">Every API request of this broker in this mode, newest first, kept 30 days. An entry keeps the answer's error in full.</p>
            <RequestStatsChart interval={query.get('chart') === 'day' ? 'day' : 'hour'} choose={(i) => query.set({ chart: i === 'day' ? 'day' : undefined }, { replace: true })} />
            <FilterForm key={JSON.stringify(filters)} filters={filters} onApply={apply} />
            <EntryList key={JSON.stringify(filters)} filters={filters} open={entry.open} toggle={(id) => (entry.open === id ? entry.close() : entry.show(id))} />
          </>
        }
        detail={entry.open !== undefined && <EntryById key={entry.open} id={entry.open} />}
      />
    </section>
  );
}

function EntryList({ filters, open, toggle }: { filters: Filters; open: string | undefined; toggle: (id: string) => void }) {
  const paging = useCursor();
  const byId = filters.key.startsWith('key_');
  const page = useLoad(async () => {
    const query = {
      limit: 25,
      request_id: filters.requestId || undefined,
      status: filters.status || undefined,
      operation: filters.operation || undefined,
      api_key_id: byId ? filters.key : undefined,
      api_key_name: !byId && filters.key ? filters.key : undefined,
      created_gte: filters.from || undefined,
      created_lt: filters.to || undefined,
      starting_after: paging.cursor,
    };
    return (await api.GET('/api/v1/request-logs', { params: { query } })).data;
  }, [paging.cursor]);
  const entries = page.data?.data ?? [];
  return (
    <>
      <ProblemNote problem={page.problem} />
      {page.loading && <p role="status">Loading…</p>}
      {page.data && entries.length === 0 && <p>No requests match.</p>}
      {entries.length > 0 && (
        <TableWrap label="Requests, newest first">
          <thead>
            <tr><th scope="col">Time</th><th scope="col">Request</th><th scope="col">Status</th><th scope="col">Error</th><th scope="col"><span class="visually-hidden">Details</span></th></tr>
          </thead>
          <tbody>
            {entries.map((e) => <EntryRow key={e.request_id} entry={e} open={open === e.request_id} toggle={() => toggle(e.request_id)} />)}
          </tbody>
        </TableWrap>
      )}
      {page.data && <Pager label="Request logs" hasMore={page.data.pagination.has_more} next={page.data.pagination.next_starting_after} paging={paging} />}
    </>
  );
}

function FilterForm({ filters, onApply }: { filters: Filters; onApply: (f: Filters) => void }) {
  // The draft holds the time fields as the browser's local time; the URL holds them in UTC.
  const [draft, setDraft] = useState({ ...filters, from: localFromIso(filters.from), to: localFromIso(filters.to) });
  const set = (field: keyof Filters) => (e: Event) => setDraft({ ...draft, [field]: (e.currentTarget as HTMLInputElement).value });
  const none: Filters = { status: '', operation: '', key: '', requestId: '', from: '', to: '' };
  return (
    <form
      class="filters"
      aria-label="Filter request logs"
      onSubmit={(e) => {
        e.preventDefault();
        onApply({ ...draft, requestId: draft.requestId.trim(), key: draft.key.trim(), from: isoFromLocal(draft.from) ?? '', to: isoFromLocal(draft.to) ?? '' });
      }}
    >
      <label>
        Request id
        <input type="search" value={draft.requestId} onInput={set('requestId')} maxLength={128} placeholder="req_… or your own X-Request-Id" />
      </label>
      <label>
        Status
        <select value={draft.status} onChange={set('status')}>
          <option value="">Any</option>
          <option value="2xx">2xx success</option>
          <option value="4xx">4xx refused</option>
          <option value="5xx">5xx server error</option>
          <option value="429">429 rate limited</option>
        </select>
      </label>
      <label>
        Operation
        <input value={draft.operation} onInput={set('operation')} pattern="[A-Za-z]{1,64}" placeholder="e.g. upgradeService" />
      </label>
      <label>
        Key (id or name)
        <input value={draft.key} onInput={set('key')} placeholder="key_… or its name" />
      </label>
      <label>
        From
        <input type="datetime-local" step={1} value={draft.from} onInput={set('from')} />
      </label>
      <label>
        Until
        <input type="datetime-local" step={1} value={draft.to} onInput={set('to')} />
      </label>
      <div class="actions">
        <button type="submit">Apply filters</button>
        <button type="button" onClick={() => onApply(none)}>Clear</button>
      </div>
    </form>
  );
}

function EntryRow({ entry, open, toggle }: { entry: Entry; open: boolean; toggle: () => void }) {
  return (
    <tr class={open ? 'is-open' : undefined}>
      <td><Time at={entry.created_at} /></td>
      <td>
        <code class="wrap">{entry.method} {entry.path}</code>
        {entry.operation && <div class="muted">{entry.operation}{entry.source === 'console' ? ' · console' : ''}</div>}
      </td>
      <td><Badge value={entry.status} /></td>
      <td>{entry.error ? <><code>{entry.error.code}</code>{entry.error.message && <div>{entry.error.message}</div>}</> : <span class="muted">—</span>}</td>
      <td>
        <button type="button" aria-expanded={open} aria-controls={open ? 'entry-detail' : undefined} data-opens={entry.request_id} onClick={toggle}>
          {open ? 'Hide' : 'Details'}<span class="visually-hidden"> of {entry.request_id}</span>
        </button>
      </td>
    </tr>
  );
}

function EntryById({ id }: { id: string }) {
  const entry = useLoad(async () => (await api.GET('/api/v1/request-logs/{request_id}', { params: { path: { request_id: id } } })).data.data, [id]);
  return (
    <article class="panel detail" id="entry-detail" aria-labelledby="entry-title">
      <h2 id="entry-title" class="detail-heading" tabIndex={-1}>Request <code class="wrap">{id}</code></h2>
      <ProblemNote problem={entry.problem} title="This entry could not be read" />
      {entry.loading && !entry.data && <p role="status">Loading…</p>}
      {entry.data && <EntryDetail entry={entry.data} />}
    </article>
  );
}

function EntryDetail({ entry }: { entry: Entry }) {
  const curl = `curl -sS "${location.origin}/api/v1/request-logs/${entry.request_id}" \\\n  -H "Authorization: Bearer $CAPI_KEY"`;
  return (
    <>
      <dl class="facts">
        <dt>Time</dt><dd><Time at={entry.created_at} utc /></dd>
        <dt>Request</dt><dd><code class="wrap">{entry.method} {entry.path}</code></dd>
        <dt>Status</dt><dd><Badge value={entry.status} /></dd>
        <dt>Operation</dt><dd>{entry.operation ?? <span class="muted">none (unknown path or method)</span>}</dd>
        <dt>Key</dt><dd>{entry.api_key_name ?? <span class="muted">(a key since deleted)</span>} <code>{entry.api_key_id}</code></dd>
        <dt>Made from</dt><dd>{entry.source === 'console' ? 'this console' : 'the API'}</dd>
        <dt>Mode</dt><dd>{entry.mode}</dd>
        <dt>IP address</dt><dd>{entry.ip}</dd>
        <dt>Duration</dt><dd>{entry.duration_ms} ms</dd>
        <dt>Replayed</dt><dd>{entry.idempotency_replayed ? 'yes (Idempotency-Key)' : 'no'}</dd>
      </dl>
      {entry.error && (
        <div class="error-detail">
          <h3>Error</h3>
          <p><code>{entry.error.code}</code> {entry.error.message ?? <span class="muted">(recorded before 1.4.0: code only)</span>}</p>
          {entry.error.details && <Json label="Details" value={entry.error.details} />}
        </div>
      )}
      <h3>Fetch this entry</h3>
      <CopyText label="curl command" text={curl} />
    </>
  );
}

const hourLabel = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' });
const dayLabel = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' });

/** Requests and errors per hour (the last 24 hours) or per day (the last 30), from getRequestStats. */
function RequestStatsChart({ interval, choose }: { interval: 'hour' | 'day'; choose: (i: 'hour' | 'day') => void }) {
  const stats = useLoad(async () => (await api.GET('/api/v1/request-stats', { params: { query: { interval } } })).data.data, [interval]);
  const buckets = stats.data?.buckets ?? [];
  const errors = buckets.map((b) => b.status_classes['4xx'] + b.status_classes['5xx']);
  const rates = buckets.map((b, i) => percentOf(errors[i]!, b.requests));
  return (
    <section class="stats" aria-labelledby="request-stats-title">
      <h2 id="request-stats-title" class="visually-hidden">Requests over time</h2>
      <div class="actions" role="group" aria-label="Chart range">
        <button type="button" aria-pressed={interval === 'hour'} onClick={() => choose('hour')}>Last 24 hours, hourly</button>
        <button type="button" aria-pressed={interval === 'day'} onClick={() => choose('day')}>Last 30 days, daily</button>
      </div>
      <ProblemNote problem={stats.problem} title="The request stats could not be read" />
      {stats.data && (
        <TimeChart
          title={interval === 'hour' ? 'Requests and errors per hour' : 'Requests and errors per day (UTC days)'}
          starts={buckets.map((b) => b.start)}
          leftUnit="requests"
          bucketLabel={(start) => (interval === 'hour' ? hourLabel : dayLabel).format(new Date(start))}
          series={[
            { label: 'Requests', values: buckets.map((b) => b.requests), key: 'blue' },
            { label: 'Errors (4xx and 5xx)', values: errors, key: 'red' },
            { label: 'Error rate', values: rates, key: 'amber', axis: 'percent', unit: ' %' },
          ]}
          summary={worstRate(buckets.map((b) => b.start), rates, errors, interval === 'hour' ? hourLabel : dayLabel)}
        />
      )}
    </section>
  );
}

function worstRate(starts: string[], rates: Array<number | null>, errors: number[], label: Intl.DateTimeFormat): string {
  const total = errors.reduce((a, b) => a + b, 0);
  if (total === 0) return 'No errors in this range.';
  let worst = 0;
  rates.forEach((r, i) => {
    if ((r ?? -1) > (rates[worst] ?? -1)) worst = i;
  });
  return `${total} error${total === 1 ? '' : 's'} in this range; the highest error rate, ${rates[worst]} % (${errors[worst]} errors), from ${label.format(new Date(starts[worst]!))}.`;
}
