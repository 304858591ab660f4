/** "Requests": service requests and where they stand; a pending one can be approved or denied here. The filter and the page are the URL's. */
import { useState } from 'preact/hooks';
import { api, type Schemas } from '../api.ts';
import { useQuery } from '../router.ts';
import { Badge, Done, OffsetPager, ProblemNote, TableWrap, Time, useAction, useLoad, useQueryOffset, ViewHeading } from '../ui.tsx';

type ServiceRequest = Schemas['ServiceRequest'];

export function Requests() {
  const query = useQuery();
  // The pending ones unless the URL says otherwise (`status=any` for every status).
  const asked = query.get('status') || 'pending';
  const status = (asked === 'any' ? '' : asked) as '' | Schemas['RequestStatus'];
  const { offset, setOffset } = useQueryOffset();
  const page = useLoad(async () => {
    const query = { limit: 25, offset, status: status || undefined };
    return (await api.GET('/api/v1/requests', { params: { query } })).data;
  }, [status, offset]);
  const action = useAction();
  // The outcome is shown above the list: a decided request leaves the list of pending ones.
  const decide: Decide = (r, choice, reason) =>
    void action.run(async () => {
      if (choice === 'deny' && !reason.trim()) return 'Give a reason to deny the request: the customer is told it.';
      const body = choice === 'deny' ? { action: choice, denial_reason: reason.trim() } : { action: choice };
      const { data } = await api.POST('/api/v1/requests/{request_id}/manage', { params: { path: { request_id: r.request_id } }, body });
      page.reload();
      // The sandbox simulates the decision and stores nothing: say what it answered, not that the request changed.
      if (data.data.simulated) return `The sandbox answered ${data.data.request_status} for ${r.request_id} (simulated: nothing was stored, so the list still shows it as it was).`;
      return `${r.request_id}: ${data.data.request_status}.`;
    });
  return (
    <section aria-labelledby="view-title">
      <ViewHeading><span id="view-title">Requests</span></ViewHeading>
      <p class="lede">Orders, upgrades, downgrades and cancellations. A pending one waits for a decision.</p>
      <div class="filters">
        <label>
          Status
          <select value={asked} onChange={(e) => query.set({ status: e.currentTarget.value === 'pending' ? undefined : e.currentTarget.value, offset: undefined })}>
            <option value="any">Any</option>
            <option value="pending">Pending</option>
            <option value="provider_review">Provider review</option>
            <option value="approved">Approved</option>
            <option value="denied">Denied</option>
          </select>
        </label>
      </div>
      <ProblemNote problem={page.problem} />
      <ProblemNote problem={action.problem} />
      <Done text={action.done} />
      {page.data && page.data.data.length === 0 && <p>No requests match.</p>}
      {page.data && page.data.data.length > 0 && (
        <TableWrap label="Service requests">
          <thead><tr><th scope="col">Request</th><th scope="col">Type</th><th scope="col">Service</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col">Decision</th></tr></thead>
          <tbody>
            {page.data.data.map((r) => <RequestRow key={r.request_id} request={r} decide={decide} busy={action.busy} />)}
          </tbody>
        </TableWrap>
      )}
      {page.data && <OffsetPager label="Requests" pagination={page.data.pagination} setOffset={setOffset} />}
    </section>
  );
}

type Decide = (r: ServiceRequest, choice: 'approve' | 'deny', reason: string) => void;

function RequestRow({ request: r, decide, busy }: { request: ServiceRequest; decide: Decide; busy: boolean }) {
  const [reason, setReason] = useState('');
  const plan = r.requested_plan ? `${r.current_plan ? `${r.current_plan} → ` : ''}${r.requested_plan}` : '';
  return (
    <tr>
      <td><code>{r.request_id}</code></td>
      <td>{r.request_type}{plan && <div class="muted">{plan}</div>}</td>
      <td>{r.service_number ?? ''}<div class="muted">{r.hostname ?? ''}</div></td>
      <td><Badge value={r.request_status} />{r.denial_reason && <div class="muted wrap">{r.denial_reason}</div>}</td>
      <td><Time at={r.created_at} /></td>
      <td>
        {r.request_status === 'pending' ? (
          <div class="decide">
            <button type="button" disabled={busy} onClick={() => decide(r, 'approve', reason)}>Approve<span class="visually-hidden"> {r.request_id}</span></button>
            <label>
              <span class="visually-hidden">Reason to deny {r.request_id}</span>
              <input value={reason} onInput={(e) => setReason(e.currentTarget.value)} placeholder="Reason to deny" />
            </label>
            <button type="button" disabled={busy} onClick={() => decide(r, 'deny', reason)}>Deny<span class="visually-hidden"> {r.request_id}</span></button>
          </div>
        ) : (
          <Time at={r.decided_at} />
        )}
      </td>
    </tr>
  );
}
