/** "Services": the broker's hosting services, filtered by status or searched; the filters and the page are the URL's. */
import { useState } from 'preact/hooks';
import { api, type Schemas } from '../api.ts';
import { useQuery } from '../router.ts';
import { Badge, OffsetPager, ProblemNote, TableWrap, Time, useLoad, useQueryOffset, ViewHeading } from '../ui.tsx';

const PAGE = 25;

export function Services() {
  const query = useQuery();
  const status = query.get('status') as '' | Schemas['ServiceStatus'];
  const search = query.get('search');
  const { offset, setOffset } = useQueryOffset();
  const [draft, setDraft] = useState(search);
  const page = useLoad(async () => {
    const query = { limit: PAGE, offset, status: status || undefined, search: search || undefined };
    return (await api.GET('/api/v1/services', { params: { query } })).data;
  }, [status, search, offset]);
  return (
    <section aria-labelledby="view-title">
      <ViewHeading><span id="view-title">Services</span></ViewHeading>
      <p class="lede">The hosting services of this broker{page.data ? `: ${page.data.pagination.total} in all` : ''}.</p>
      <form class="filters" aria-label="Filter services" onSubmit={(e) => { e.preventDefault(); query.set({ search: draft.trim(), offset: undefined }); }}>
        <label>
          Status
          <select value={status} onChange={(e) => query.set({ status: e.currentTarget.value, offset: undefined })}>
            <option value="">Any</option>
            <option value="pending">Pending</option>
            <option value="active">Active</option>
            <option value="suspended">Suspended</option>
            <option value="cancelled">Cancelled</option>
          </select>
        </label>
        <label>
          Search
          <input type="search" value={draft} onInput={(e) => setDraft(e.currentTarget.value)} placeholder="host name, e-mail, number" />
        </label>
        <div class="actions"><button type="submit">Search</button></div>
      </form>
      <ProblemNote problem={page.problem} />
      {page.data && page.data.data.length === 0 && <p>No services match.</p>}
      {page.data && page.data.data.length > 0 && (
        <TableWrap label="Services">
          <thead><tr><th scope="col">Number</th><th scope="col">Host name</th><th scope="col">Plan</th><th scope="col">Status</th><th scope="col">Customer</th><th scope="col">Created</th></tr></thead>
          <tbody>
            {page.data.data.map((s) => (
              <tr key={s.service_number}>
                <td>{s.service_number}</td>
                <td><code class="wrap">{s.hostname}</code></td>
                <td>{s.plan}</td>
                <td><Badge value={s.status} />{s.cancel_at && <div class="muted">cancels <Time at={s.cancel_at} /></div>}</td>
                <td class="wrap">{s.customer_name ?? ''}<div class="muted">{s.customer_email}</div></td>
                <td><Time at={s.created_at} /></td>
              </tr>
            ))}
          </tbody>
        </TableWrap>
      )}
      {page.data && <OffsetPager label="Services" pagination={page.data.pagination} setOffset={setOffset} />}
    </section>
  );
}
