/** "Request logs": the API's own log of the broker's requests, filtered, each entry with its error in full. */
import { useState } from 'preact/hooks';
import { api, type Schemas } from '../api.ts';
import { Badge, CopyText, isoFromLocal, Json, Pager, ProblemNote, TableWrap, Time, useCursor, useLoad, ViewHeading } from '../ui.tsx';

type Entry = Schemas['RequestLog'];

interface Filters {
  status: string;
  operation: string;
  apiKeyId: string;
  from: string;
  to: string;
}

const NO_FILTERS: Filters = { status: '', operation: '', apiKeyId: '', from: '', to: '' };

export function RequestLogs() {
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [open, setOpen] = useState<string>();
  const paging = useCursor();
  const page = useLoad(async () => {
    const query = {
      limit: 25,
      status: filters.status || undefined,
      operation: filters.operation || undefined,
      api_key_id: filters.apiKeyId || undefined,
      created_gte: isoFromLocal(filters.from),
      created_lt: isoFromLocal(filters.to),
      starting_after: paging.cursor,
    };
    return (await api.GET('/api/v1/request-logs', { params: { query } })).data;
  }, [filters, paging.cursor]);
  const entries = page.data?.data ?? [];
  const apply = (next: Filters) => {
    paging.reset();
    setOpen(undefined);
    setFilters(next);
  };
  return (
    <section aria-labelledby="view-title">
      <ViewHeading><span id="view-title">Request logs</span></ViewHeading>
      <p class="lede">Every API request of this broker in this mode, newest first, kept 30 days. An entry keeps the answer's error in full.</p>
      <FilterForm filters={filters} entries={entries} onApply={apply} />
      <ProblemNote problem={page.problem} />
      {page.loading && <p role="status">Loading…</p>}
      {page.data && entries.length === 0 && <p>No requests match.</p>}
      {entries.length > 0 && (
        <TableWrap label="Requests, newest first">
          <thead>
            <tr><th scope="col">Time</th><th scope="col">Request</th><th scope="col">Status</th><th scope="col">Error</th><th scope="col"><span class="visually-hidden">Details</span></th></tr>
          </thead>
          <tbody>
            {entries.map((e) => (
              <EntryRows key={e.request_id} entry={e} open={open === e.request_id} toggle={() => setOpen(open === e.request_id ? undefined : e.request_id)} />
            ))}
          </tbody>
        </TableWrap>
      )}
      {page.data && <Pager label="Request logs" hasMore={page.data.pagination.has_more} next={page.data.pagination.next_starting_after} paging={paging} />}
    </section>
  );
}

function FilterForm({ filters, entries, onApply }: { filters: Filters; entries: Entry[]; onApply: (f: Filters) => void }) {
  const [draft, setDraft] = useState(filters);
  const set = (field: keyof Filters) => (e: Event) => setDraft({ ...draft, [field]: (e.currentTarget as HTMLInputElement).value });
  const operations = [...new Set(entries.map((e) => e.operation).filter((o): o is string => o !== null))].sort();
  const keys = [...new Set(entries.map((e) => e.api_key_id))].sort();
  return (
    <form
      class="filters"
      aria-label="Filter request logs"
      onSubmit={(e) => {
        e.preventDefault();
        onApply(draft);
      }}
    >
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
        <input value={draft.operation} onInput={set('operation')} list="log-operations" pattern="[A-Za-z]{1,64}" placeholder="e.g. upgradeService" />
        <datalist id="log-operations">{operations.map((o) => <option key={o} value={o} />)}</datalist>
      </label>
      <label>
        Key
        <input value={draft.apiKeyId} onInput={set('apiKeyId')} list="log-keys" pattern="key_[A-Za-z0-9_]+" placeholder="key_…" />
        <datalist id="log-keys">{keys.map((k) => <option key={k} value={k} />)}</datalist>
      </label>
      <label>
        From
        <input type="datetime-local" value={draft.from} onInput={set('from')} />
      </label>
      <label>
        Until
        <input type="datetime-local" value={draft.to} onInput={set('to')} />
      </label>
      <div class="actions">
        <button type="submit">Apply filters</button>
        <button type="button" onClick={() => { setDraft(NO_FILTERS); onApply(NO_FILTERS); }}>Clear</button>
      </div>
    </form>
  );
}

function EntryRows({ entry, open, toggle }: { entry: Entry; open: boolean; toggle: () => void }) {
  const detailId = `log-${entry.request_id}`;
  return (
    <>
      <tr>
        <td><Time at={entry.created_at} /></td>
        <td>
          <code>{entry.method} {entry.path}</code>
          {entry.operation && <div class="muted">{entry.operation}{entry.source === 'console' ? ' · console' : ''}</div>}
        </td>
        <td><Badge value={entry.status} /></td>
        <td>{entry.error ? <><code>{entry.error.code}</code>{entry.error.message && <div>{entry.error.message}</div>}</> : <span class="muted">—</span>}</td>
        <td>
          <button type="button" aria-expanded={open} aria-controls={detailId} onClick={toggle}>
            {open ? 'Hide' : 'Details'}<span class="visually-hidden"> of {entry.request_id}</span>
          </button>
        </td>
      </tr>
      {open && (
        <tr class="detail-row">
          <td colSpan={5} id={detailId}>
            <EntryDetail entry={entry} />
          </td>
        </tr>
      )}
    </>
  );
}

function EntryDetail({ entry }: { entry: Entry }) {
  const curl = `curl -sS "${location.origin}/api/v1/request-logs/${entry.request_id}" \\\n  -H "Authorization: Bearer $CAPI_KEY"`;
  return (
    <div class="detail">
      <dl class="facts">
        <dt>Request id</dt><dd><code>{entry.request_id}</code></dd>
        <dt>Operation</dt><dd>{entry.operation ?? <span class="muted">none (unknown path or method)</span>}</dd>
        <dt>Key</dt><dd><code>{entry.api_key_id}</code></dd>
        <dt>Made from</dt><dd>{entry.source === 'console' ? 'this console' : 'the API'}</dd>
        <dt>Mode</dt><dd>{entry.mode}</dd>
        <dt>IP address</dt><dd>{entry.ip}</dd>
        <dt>Duration</dt><dd>{entry.duration_ms} ms</dd>
        <dt>Replayed</dt><dd>{entry.idempotency_replayed ? 'yes (Idempotency-Key)' : 'no'}</dd>
      </dl>
      {entry.error && (
        <div class="error-detail">
          <h2>Error</h2>
          <p><code>{entry.error.code}</code> {entry.error.message ?? <span class="muted">(recorded before 1.4.0: code only)</span>}</p>
          {entry.error.details && <Json label="Details" value={entry.error.details} />}
        </div>
      )}
      <h2>Fetch this entry</h2>
      <CopyText label="curl command" text={curl} />
    </div>
  );
}
