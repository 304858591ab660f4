/** "Reports": the broker's report runs and, for each, its recipients and how their e-mails went. The open run is the URL's. */
import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { Badge, Pager, ProblemNote, SplitView, TableWrap, Time, useCursor, useLoad, useOpenEntry, ViewHeading } from '../ui.tsx';

const listReports = async (query: { limit: number; starting_after?: string }) =>
  (await api.GET('/api/v1/reports', { params: { query } })).data;

export function Reports() {
  const paging = useCursor();
  const entry = useOpenEntry();
  const [lookup, setLookup] = useState('');
  const page = useLoad(() => listReports({ limit: 25, ...(paging.cursor ? { starting_after: paging.cursor } : {}) }), [paging.cursor]);
  const open = entry.open;
  return (
    <section aria-labelledby="view-title">
      <ViewHeading><span id="view-title">Reports</span></ViewHeading>
      <SplitView
        open={open}
        onBack={entry.close}
        list={
          <>
            <p class="lede">Report runs, newest first, with each recipient's e-mail.</p>
            <form class="filters" aria-label="Open a report run by id" onSubmit={(e) => { e.preventDefault(); if (lookup.trim()) entry.show(lookup.trim()); }}>
              <label>
                Report id
                <input value={lookup} onInput={(e) => setLookup(e.currentTarget.value)} />
              </label>
              <div class="actions"><button type="submit">Open</button></div>
            </form>
            <ProblemNote problem={page.problem} title="The runs could not be listed" />
            {page.data && page.data.data.length === 0 && <p>No report runs yet.</p>}
            {page.data && page.data.data.length > 0 && (
              <TableWrap label="Report runs, newest first">
                <thead><tr><th scope="col">Created</th><th scope="col">Report</th><th scope="col">Status</th><th scope="col">Recipients</th><th scope="col"><span class="visually-hidden">Details</span></th></tr></thead>
                <tbody>
                  {page.data.data.map((r) => (
                    <tr key={r.report_id} class={open === r.report_id ? 'is-open' : undefined}>
                      <td><Time at={r.created_at} /></td>
                      <td>{r.report_type}<div class="muted"><code class="wrap">{r.report_id}</code></div></td>
                      <td><Badge value={r.status} /></td>
                      <td>{r.recipients_sent} sent, {r.recipients_failed} failed, {r.recipients_pending} pending</td>
                      <td>
                        <button type="button" aria-pressed={open === r.report_id} data-opens={r.report_id} onClick={() => (open === r.report_id ? entry.close() : entry.show(r.report_id))}>
                          {open === r.report_id ? 'Close' : 'Recipients'}<span class="visually-hidden"> of {r.report_id}</span>
                        </button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </TableWrap>
            )}
            {page.data && <Pager label="Report runs" hasMore={page.data.pagination.has_more} next={page.data.data.at(-1)?.report_id} paging={paging} />}
          </>
        }
        detail={open !== undefined && <RunDetail key={open} id={open} />}
      />
    </section>
  );
}

function RunDetail({ id }: { id: string }) {
  const run = useLoad(async () => (await api.GET('/api/v1/reports/{report_id}', { params: { path: { report_id: id } } })).data.data, [id]);
  const r = run.data;
  return (
    <article class="panel" aria-labelledby="run-title">
      <h2 id="run-title" class="detail-heading" tabIndex={-1}>Report run <code class="wrap">{id}</code></h2>
      <ProblemNote problem={run.problem} />
      {r && (
        <>
          <dl class="facts">
            <dt>Report</dt><dd>{r.report_type}{r.date_range && ` (${r.date_range.start} to ${r.date_range.end})`}</dd>
            <dt>Status</dt><dd><Badge value={r.status} />{r.error && <div>{r.error}</div>}</dd>
            <dt>Created</dt><dd><Time at={r.created_at} utc /></dd>
            <dt>Finished</dt><dd><Time at={r.finished_at} utc /></dd>
          </dl>
          <TableWrap label={`Recipients of ${id}`}>
            <thead><tr><th scope="col">Recipient</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Sent</th><th scope="col">Delivery</th><th scope="col">Last error</th></tr></thead>
            <tbody>
              {r.recipients.map((p) => (
                <tr key={p.email}>
                  <td class="wrap">{p.email}</td>
                  <td><Badge value={p.status} /></td>
                  <td>{p.attempts}</td>
                  <td><Time at={p.sent_at} /></td>
                  <td>{p.delivery ?? <span class="muted">—</span>}{p.delivery === 'link' && <div class="muted">{p.download_count} download{p.download_count === 1 ? '' : 's'}</div>}</td>
                  <td class="wrap">{p.last_error ?? <span class="muted">—</span>}</td>
                </tr>
              ))}
            </tbody>
          </TableWrap>
          <button type="button" onClick={run.reload}>Refresh</button>
        </>
      )}
    </article>
  );
}
