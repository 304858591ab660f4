/** "Events": the feed, filtered by type; an event with its object, previous attributes and every delivery. Types and the open event are the URL's. */
import { api, EVENT_TYPES, type EventType, type Schemas } from '../api.ts';
import { useQuery } from '../router.ts';
import { Badge, Done, Json, Pager, ProblemNote, SplitView, TableWrap, Time, useAction, useCursor, useLoad, useOpenEntry, ViewHeading } from '../ui.tsx';

export function Events() {
  const query = useQuery();
  const types = query.get('types').split(',').filter((t): t is EventType => (EVENT_TYPES as readonly string[]).includes(t));
  const entry = useOpenEntry();
  const toggle = (type: EventType) => {
    const next = types.includes(type) ? types.filter((t) => t !== type) : [...types, type];
    query.set({ types: next.join(','), open: undefined }, { replace: true });
  };
  return (
    <section aria-labelledby="view-title">
      <ViewHeading><span id="view-title">Events</span></ViewHeading>
      <SplitView
        open={entry.open}
        onBack={entry.close}
        list={
          <>
            <p class="lede">What changed, newest first, as your webhook endpoints receive it.</p>
            <fieldset class="types">
              <legend>Types (none checked: every type)</legend>
              {EVENT_TYPES.map((t) => (
                <label key={t} class="check">
                  <input type="checkbox" checked={types.includes(t)} onChange={() => toggle(t)} /> {t}
                </label>
              ))}
            </fieldset>
            <EventList key={types.join(',')} types={types} open={entry.open} toggle={(id) => (entry.open === id ? entry.close() : entry.show(id))} />
          </>
        }
        detail={entry.open !== undefined && <EventDetail key={entry.open} id={entry.open} />}
      />
    </section>
  );
}

function EventList({ types, open, toggle }: { types: EventType[]; open: string | undefined; toggle: (id: string) => void }) {
  const paging = useCursor();
  const page = useLoad(async () => {
    const query = { limit: 25, types: types.length > 0 ? types : undefined, starting_after: paging.cursor };
    return (await api.GET('/api/v1/events', { params: { query } })).data;
  }, [paging.cursor]);
  return (
    <>
      <ProblemNote problem={page.problem} />
      {page.loading && <p role="status">Loading…</p>}
      {page.data && page.data.data.length === 0 && <p>No events.</p>}
      {page.data && page.data.data.length > 0 && (
        <TableWrap label="Events, newest first">
          <thead><tr><th scope="col">Time</th><th scope="col">Type</th><th scope="col">Event</th><th scope="col"><span class="visually-hidden">Details</span></th></tr></thead>
          <tbody>
            {page.data.data.map((e) => (
              <tr key={e.id} class={open === e.id ? 'is-open' : undefined}>
                <td><Time at={e.created_at} /></td>
                <td><code>{e.type}</code>{e.data.example && <div class="muted">example</div>}</td>
                <td><code class="wrap">{e.id}</code></td>
                <td>
                  <button type="button" aria-pressed={open === e.id} data-opens={e.id} onClick={() => toggle(e.id)}>
                    {open === e.id ? 'Close' : 'Open'}<span class="visually-hidden"> {e.id}</span>
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </TableWrap>
      )}
      {page.data && <Pager label="Events" hasMore={page.data.pagination.has_more} next={page.data.pagination.next_starting_after} paging={paging} />}
    </>
  );
}

export function EventDetail({ id }: { id: string }) {
  const event = useLoad(async () => (await api.GET('/api/v1/events/{event_id}', { params: { path: { event_id: id } } })).data.data, [id]);
  const action = useAction();
  const redeliver = () =>
    action.run(async () => {
      await api.POST('/api/v1/events/{event_id}/redeliver', { params: { path: { event_id: id } }, body: {} });
      event.reload();
      return 'Redelivery queued to every endpoint that takes this type.';
    });
  const e = event.data;
  return (
    <article class="panel" aria-labelledby={`event-${id}`}>
      <h2 id={`event-${id}`} class="detail-heading" tabIndex={-1}>Event <code class="wrap">{id}</code></h2>
      <ProblemNote problem={event.problem} />
      {e && (
        <>
          <dl class="facts">
            <dt>Type</dt><dd><code>{e.type}</code></dd>
            <dt>Created</dt><dd><Time at={e.created_at} utc /></dd>
            <dt>Mode</dt><dd>{e.mode}</dd>
          </dl>
          {e.data.example && <p class="note">An example event (sent with “Send an example”): its object is the API reference's example, not a record of yours.</p>}
          <Json label="Object" value={e.data.object} />
          {e.data.previous_attributes !== undefined && <Json label="Previous attributes" value={e.data.previous_attributes} />}
          <h3>Deliveries</h3>
          {e.deliveries.length === 0 && <p>No endpoint was owed this event.</p>}
          {e.deliveries.map((d, i) => <DeliveryAttempts key={i} delivery={d} recovered={recoveredLater(e.deliveries, i)} />)}
          <div class="actions">
            <button type="button" disabled={action.busy} onClick={redeliver}>Redeliver</button>
            <button type="button" onClick={event.reload}>Refresh</button>
          </div>
          <ProblemNote problem={action.problem} />
          <Done text={action.done} />
        </>
      )}
    </article>
  );
}

/**
 * Whether the failed delivery `i` was recovered: a later delivery of this event to the same endpoint
 * was delivered (the API's own rule for `superseded_by` in the endpoint's deliveries list).
 */
function recoveredLater(deliveries: Array<Schemas['EventDelivery']>, i: number): boolean {
  const d = deliveries[i]!;
  return d.status === 'failed' && deliveries.slice(i + 1).some((later) => later.endpoint_id === d.endpoint_id && later.status === 'delivered');
}

function DeliveryAttempts({ delivery, recovered }: { delivery: Schemas['EventDelivery']; recovered: boolean }) {
  return (
    <div class="delivery">
      <p>
        To <code class="wrap">{delivery.endpoint_id}</code>: <DeliveryStatus status={delivery.status} recovered={recovered} />, {delivery.attempt_count} attempt{delivery.attempt_count === 1 ? '' : 's'}
        {delivery.next_attempt_at && <> · next attempt <Time at={delivery.next_attempt_at} /></>}
      </p>
      {delivery.attempts.length > 0 && <Attempts attempts={delivery.attempts} label={`Attempts to ${delivery.endpoint_id}`} />}
    </div>
  );
}

/** A delivery's status; a failed one a later delivery made good is "recovered", not shown as a failure. */
export function DeliveryStatus({ status, recovered }: { status: string; recovered: boolean }) {
  if (status === 'failed' && recovered) {
    return <span class="badge recovered" title="This delivery failed; a later delivery of the same event to this endpoint succeeded, so the receiver has the event.">failed, recovered</span>;
  }
  return <Badge value={status} />;
}

export function Attempts({ attempts, label }: { attempts: Array<Schemas['EventDeliveryAttempt']>; label: string }) {
  return (
    <TableWrap label={label}>
      <thead><tr><th scope="col">#</th><th scope="col">Time</th><th scope="col">Answer</th><th scope="col">Took</th><th scope="col">Body excerpt or error</th></tr></thead>
      <tbody>
        {attempts.map((a) => (
          <tr key={a.number}>
            <td>{a.number}</td>
            <td><Time at={a.attempted_at} /></td>
            <td>{a.status_code === null ? <span class="muted">none</span> : <Badge value={a.status_code} />}</td>
            <td>{a.duration_ms} ms</td>
            <td>{a.error ?? (a.response_excerpt ? <code>{a.response_excerpt}</code> : <span class="muted">—</span>)}</td>
          </tr>
        ))}
      </tbody>
    </TableWrap>
  );
}
