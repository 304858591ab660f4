/**
 * "Webhook endpoints": list, create, edit, enable or disable, rotate the secret, ping, send an
 * example event, deliveries (recovered ones marked), redeliver, recover, and each endpoint's
 * success rate and latency over time (getWebhookEndpointStats). The open endpoint, its deliveries'
 * filter and the event whose attempts are shown are the URL's.
 */
import { useState } from 'preact/hooks';
import { api, EVENT_TYPES, type EventType, type Schemas } from '../api.ts';
import { percentOf, TimeChart } from '../chart.tsx';
import { useQuery } from '../router.ts';
import {
  Badge, CopyText, Done, isoFromLocal, Pager, ProblemNote, SplitView, TableWrap, Time, useAction, useCursor, useLoad, useOpenEntry, ViewHeading,
} from '../ui.tsx';
import { DeliveryStatus, EventDetail } from './events.tsx';

type Endpoint = Schemas['WebhookEndpoint'];

export function WebhookEndpoints() {
  const list = useLoad(async () => (await api.GET('/api/v1/webhook-endpoints', { params: { query: { limit: 100 } } })).data.data, []);
  const entry = useOpenEntry();
  const [secret, setSecret] = useState<{ id: string; secret: string }>();
  return (
    <section aria-labelledby="view-title">
      <ViewHeading><span id="view-title">Webhook endpoints</span></ViewHeading>
      {secret && <SecretOnce {...secret} onDone={() => setSecret(undefined)} />}
      <SplitView
        open={entry.open}
        onBack={entry.close}
        list={
          <>
            <p class="lede">Where this broker's events are sent, and how each delivery went.</p>
            <ProblemNote problem={list.problem} />
            {list.data && list.data.length === 0 && <p>No endpoints yet.</p>}
            {list.data && list.data.length > 0 && (
              <TableWrap label="Webhook endpoints">
                <thead><tr><th scope="col">URL</th><th scope="col">Status</th><th scope="col">Last success</th><th scope="col">Failures</th><th scope="col"><span class="visually-hidden">Manage</span></th></tr></thead>
                <tbody>
                  {list.data.map((e) => (
                    <tr key={e.id} class={entry.open === e.id ? 'is-open' : undefined}>
                      <td><code class="wrap">{e.url}</code>{e.description && <div class="muted wrap">{e.description}</div>}</td>
                      <td><Badge value={e.status} />{e.disabled_reason && <div class="muted">{e.disabled_reason}</div>}</td>
                      <td><Time at={e.last_success_at} /></td>
                      <td>{e.consecutive_failures}</td>
                      <td>
                        <button type="button" aria-pressed={entry.open === e.id} data-opens={e.id} onClick={() => (entry.open === e.id ? entry.close() : entry.show(e.id))}>
                          {entry.open === e.id ? 'Close' : 'Manage'}<span class="visually-hidden"> {e.url}</span>
                        </button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </TableWrap>
            )}
            <CreateEndpoint
              created={(e) => {
                setSecret({ id: e.id, secret: e.secret });
                list.reload();
                entry.show(e.id);
              }}
            />
          </>
        }
        detail={entry.open !== undefined && <EndpointById key={entry.open} id={entry.open} changed={list.reload} secretShown={(id, s) => setSecret({ id, secret: s })} />}
      />
    </section>
  );
}

function EndpointById({ id, changed, secretShown }: { id: string; changed: () => void; secretShown: (id: string, s: string) => void }) {
  const endpoint = useLoad(async () => (await api.GET('/api/v1/webhook-endpoints/{endpoint_id}', { params: { path: { endpoint_id: id } } })).data.data, [id]);
  const both = () => {
    endpoint.reload();
    changed();
  };
  return (
    <article class="panel" aria-labelledby="endpoint-title">
      <h2 id="endpoint-title" class="detail-heading" tabIndex={-1}>Endpoint <code class="wrap">{id}</code></h2>
      <ProblemNote problem={endpoint.problem} title="This endpoint could not be read" />
      {endpoint.loading && !endpoint.data && <p role="status">Loading…</p>}
      {endpoint.data && <EndpointPanel endpoint={endpoint.data} changed={both} secretShown={(s) => secretShown(id, s)} />}
    </article>
  );
}

function SecretOnce({ id, secret, onDone }: { id: string; secret: string; onDone: () => void }) {
  return (
    <div class="secret" role="alert">
      <h2>Signing secret of <code>{id}</code></h2>
      <p>Shown this once: keep it where your receiver reads it. Nobody can show it again; rotate it if it is lost.</p>
      <CopyText label="Secret" text={secret} />
      <button type="button" onClick={onDone}>I have kept it</button>
    </div>
  );
}

function EventTypeChoice({ chosen, setChosen, legend }: { chosen: string[]; setChosen: (t: string[]) => void; legend: string }) {
  return (
    <fieldset class="types">
      <legend>{legend}</legend>
      {EVENT_TYPES.filter((t) => t !== 'ping').map((t) => (
        <label key={t} class="check">
          <input type="checkbox" checked={chosen.includes(t)} onChange={() => setChosen(chosen.includes(t) ? chosen.filter((c) => c !== t) : [...chosen, t])} /> {t}
        </label>
      ))}
    </fieldset>
  );
}

function CreateEndpoint({ created }: { created: (e: Schemas['WebhookEndpointWithSecret']) => void }) {
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [events, setEvents] = useState<string[]>([]);
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const body = { url, description: description || null, events };
      const { data } = await api.POST('/api/v1/webhook-endpoints', { body });
      created(data.data);
      setUrl('');
      setDescription('');
      setEvents([]);
      return `Endpoint ${data.data.id} created.`;
    });
  };
  return (
    <form class="panel" aria-labelledby="create-endpoint" onSubmit={submit}>
      <h2 id="create-endpoint">New endpoint</h2>
      <label>
        URL
        <input type="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} placeholder="https://hooks.example.com/capi" />
      </label>
      <label>
        Description <span class="muted">(optional)</span>
        <input value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      </label>
      <EventTypeChoice chosen={events} setChosen={setEvents} legend="Event types (none checked: every type)" />
      <button type="submit" disabled={action.busy}>Create endpoint</button>
      <ProblemNote problem={action.problem} />
      <Done text={action.done} />
    </form>
  );
}

function EndpointPanel({ endpoint, changed, secretShown }: { endpoint: Endpoint; changed: () => void; secretShown: (s: string) => void }) {
  const action = useAction();
  // Bumped by a ping or an example sent, so the deliveries list shows the delivery they made.
  const [sent, setSent] = useState(0);
  const path = { endpoint_id: endpoint.id };
  const setStatus = (status: 'enabled' | 'disabled') =>
    action.run(async () => {
      await api.POST('/api/v1/webhook-endpoints/{endpoint_id}', { params: { path }, body: { status } });
      changed();
      return status === 'enabled' ? 'Endpoint enabled.' : 'Endpoint disabled.';
    });
  const rotate = () =>
    action.run(async () => {
      const { data } = await api.POST('/api/v1/webhook-endpoints/{endpoint_id}/rotate-secret', { params: { path } });
      secretShown(data.data.secret);
      changed();
      return 'Secret rotated: the old one still verifies for a while (see the endpoint).';
    });
  const ping = () =>
    action.run(async () => {
      const { data } = await api.POST('/api/v1/webhook-endpoints/{endpoint_id}/ping', { params: { path } });
      setSent((n) => n + 1);
      return `Ping event ${data.data.id} queued.`;
    });
  return (
    <>
      {endpoint.description && <p class="wrap">{endpoint.description}</p>}
      <dl class="facts">
        <dt>URL</dt><dd><code class="wrap">{endpoint.url}</code></dd>
        <dt>Status</dt><dd><Badge value={endpoint.status} />{endpoint.disabled_reason && <div class="muted">{endpoint.disabled_reason}</div>}</dd>
        <dt>Events</dt><dd>{endpoint.events.length === 0 ? 'every type' : endpoint.events.join(', ')}</dd>
        <dt>Last success</dt><dd><Time at={endpoint.last_success_at} utc /></dd>
        <dt>Last failure</dt><dd><Time at={endpoint.last_failure_at} utc /></dd>
        <dt>Failing since</dt><dd><Time at={endpoint.failing_since} utc /></dd>
        <dt>Previous secret valid until</dt><dd><Time at={endpoint.previous_secret_expires_at} utc /></dd>
      </dl>
      <div class="actions">
        {endpoint.status === 'enabled'
          ? <button type="button" disabled={action.busy} onClick={() => setStatus('disabled')}>Disable</button>
          : <button type="button" disabled={action.busy} onClick={() => setStatus('enabled')}>Enable</button>}
        <button type="button" disabled={action.busy} onClick={rotate}>Rotate secret</button>
        <button type="button" disabled={action.busy} onClick={ping}>Send a ping</button>
      </div>
      <ProblemNote problem={action.problem} />
      <Done text={action.done} />
      <EndpointStatsCharts endpoint={endpoint} sent={sent} />
      <SendExample endpoint={endpoint} sent={() => setSent((n) => n + 1)} />
      <EditEndpoint endpoint={endpoint} changed={changed} />
      <Recover endpoint={endpoint} recovered={() => setSent((n) => n + 1)} />
      <Deliveries endpoint={endpoint} changed={changed} sent={sent} />
    </>
  );
}

/** sendExampleEvent: an event of the chosen type, with the API reference's example object, to this endpoint only. */
function SendExample({ endpoint, sent }: { endpoint: Endpoint; sent: () => void }) {
  const [type, setType] = useState<EventType>('service.created');
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const { data } = await api.POST('/api/v1/webhook-endpoints/{endpoint_id}/send-example', { params: { path: { endpoint_id: endpoint.id } }, body: { type } });
      sent();
      return `Example event ${data.data.id} (${data.data.type}) recorded for this endpoint; its delivery follows below.`;
    });
  };
  return (
    <form aria-labelledby="send-example" onSubmit={submit}>
      <h3 id="send-example">Send an example event</h3>
      <p class="muted">An event of the type you choose, its object the API reference's example (marked as an example), sent to this endpoint only and signed like any other: to try your receiver's handling of each type.</p>
      <div class="actions">
        <label>
          Type
          <select value={type} onChange={(e) => setType(e.currentTarget.value as EventType)}>
            {EVENT_TYPES.map((t) => <option key={t} value={t}>{t}</option>)}
          </select>
        </label>
        <button type="submit" disabled={action.busy}>Send the example</button>
      </div>
      <ProblemNote problem={action.problem} />
      <Done text={action.done} />
    </form>
  );
}

const hourLabel = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' });
const dayLabel = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' });

/** Success rate and attempt latency per hour (the last 24 hours) or per day (the last 30), from getWebhookEndpointStats. */
function EndpointStatsCharts({ endpoint, sent }: { endpoint: Endpoint; sent: number }) {
  const query = useQuery();
  const interval = query.get('chart') === 'day' ? 'day' : 'hour';
  const stats = useLoad(
    async () => (await api.GET('/api/v1/webhook-endpoints/{endpoint_id}/stats', { params: { path: { endpoint_id: endpoint.id }, query: { interval } } })).data.data,
    [endpoint.id, interval, sent],
  );
  const buckets = stats.data?.buckets ?? [];
  const starts = buckets.map((b) => b.start);
  const label = interval === 'hour' ? hourLabel : dayLabel;
  // A recovered failure is no failure for the receiver: it has the event.
  const rates = buckets.map((b) => percentOf(b.succeeded, b.succeeded + b.failed));
  const unrecovered = buckets.map((b) => b.failed - b.recovered);
  return (
    <section aria-labelledby="endpoint-stats-title">
      <h3 id="endpoint-stats-title">Deliveries over time</h3>
      <div class="actions" role="group" aria-label="Chart range">
        <button type="button" aria-pressed={interval === 'hour'} onClick={() => query.set({ chart: undefined }, { replace: true })}>Last 24 hours, hourly</button>
        <button type="button" aria-pressed={interval === 'day'} onClick={() => query.set({ chart: 'day' }, { replace: true })}>Last 30 days, daily</button>
      </div>
      <ProblemNote problem={stats.problem} title="The delivery stats could not be read" />
      {stats.data && (
        <>
          <TimeChart
            title="Success rate"
            starts={starts}
            leftUnit="deliveries"
            bucketLabel={(s) => label.format(new Date(s))}
            series={[
              { label: 'Succeeded', values: buckets.map((b) => b.succeeded), key: 'green' },
              { label: 'Failed, not recovered', values: unrecovered, key: 'red' },
              { label: 'Recovered', values: buckets.map((b) => b.recovered), key: 'blue' },
              { label: 'Success rate', values: rates, key: 'amber', axis: 'percent', unit: ' %' },
            ]}
            summary={lowestRate(starts, rates, buckets, label)}
          />
          <TimeChart
            title="Attempt latency"
            starts={starts}
            leftUnit="ms"
            bucketLabel={(s) => label.format(new Date(s))}
            series={[
              { label: 'p50 (median)', values: buckets.map((b) => b.latency_ms.p50), key: 'blue', unit: ' ms' },
              { label: 'p95', values: buckets.map((b) => b.latency_ms.p95), key: 'red', unit: ' ms' },
            ]}
            summary={slowest(starts, buckets, label, interval)}
          />
        </>
      )}
    </section>
  );
}

type StatsBucket = Schemas['WebhookEndpointStatsBucket'];

function lowestRate(starts: string[], rates: Array<number | null>, buckets: StatsBucket[], label: Intl.DateTimeFormat): string {
  const failed = buckets.reduce((n, b) => n + b.failed, 0);
  const recovered = buckets.reduce((n, b) => n + b.recovered, 0);
  if (buckets.every((b) => b.deliveries === 0)) return 'No deliveries in this range.';
  if (failed === 0) return 'Every delivery in this range succeeded or is still pending.';
  let worst = rates.findIndex((r) => r !== null);
  rates.forEach((r, i) => {
    if (r !== null && r < (rates[worst] ?? 101)) worst = i;
  });
  const b = buckets[worst]!;
  return `${failed} failed deliver${failed === 1 ? 'y' : 'ies'} in this range, ${recovered} of them recovered since; the lowest success rate, ${rates[worst]} % (${b.failed} of ${b.succeeded + b.failed} failed), from ${label.format(new Date(starts[worst]!))}.`;
}

function slowest(starts: string[], buckets: StatsBucket[], label: Intl.DateTimeFormat, interval: 'hour' | 'day'): string {
  let worst = -1;
  buckets.forEach((b, i) => {
    if (b.latency_ms.p95 !== null && (worst < 0 || b.latency_ms.p95 > buckets[worst]!.latency_ms.p95!)) worst = i;
  });
  if (worst < 0) return 'No attempts in this range.';
  const b = buckets[worst]!;
  return `The slowest ${interval}: p95 ${b.latency_ms.p95} ms (p50 ${b.latency_ms.p50} ms), from ${label.format(new Date(starts[worst]!))}.`;
}

function EditEndpoint({ endpoint, changed }: { endpoint: Endpoint; changed: () => void }) {
  const [url, setUrl] = useState(endpoint.url);
  const [description, setDescription] = useState(endpoint.description ?? '');
  const [events, setEvents] = useState<string[]>(endpoint.events);
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const body = { url, description: description || null, events };
      await api.POST('/api/v1/webhook-endpoints/{endpoint_id}', { params: { path: { endpoint_id: endpoint.id } }, body });
      changed();
      return 'Endpoint saved.';
    });
  };
  return (
    <form aria-labelledby="edit-endpoint" onSubmit={submit}>
      <h3 id="edit-endpoint">Edit</h3>
      <label>URL<input type="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} /></label>
      <label>Description<input value={description} onInput={(e) => setDescription(e.currentTarget.value)} /></label>
      <EventTypeChoice chosen={events} setChosen={setEvents} legend="Event types (none checked: every type)" />
      <button type="submit" disabled={action.busy}>Save changes</button>
      <ProblemNote problem={action.problem} />
      <Done text={action.done} />
    </form>
  );
}

function Recover({ endpoint, recovered }: { endpoint: Endpoint; recovered: () => void }) {
  const [since, setSince] = useState('');
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const at = isoFromLocal(since);
      if (!at) return 'Choose a time to recover from.';
      const { data } = await api.POST('/api/v1/webhook-endpoints/{endpoint_id}/recover', { params: { path: { endpoint_id: endpoint.id } }, body: { since: at } });
      const more = data.data.has_more ? ' More remain: recover again from the same time.' : '';
      // The API counts only an event's last delivery: a failure recovered or queued again already is not sent twice.
      const why = data.data.queued === 0 ? ' A failed delivery marked “recovered”, or queued again by an earlier recover or redelivery, is not queued twice.' : '';
      recovered();
      return `${data.data.queued} failed deliver${data.data.queued === 1 ? 'y' : 'ies'} queued again.${more}${why}`;
    });
  };
  return (
    <form aria-labelledby="recover-endpoint" onSubmit={submit}>
      <h3 id="recover-endpoint">Recover failed deliveries</h3>
      <p class="muted">Sends again every delivery to this endpoint that failed since the time you choose, unless its event was delivered later (“recovered”) or is queued again already.</p>
      <label>Since<input type="datetime-local" required step={1} value={since} onInput={(e) => setSince(e.currentTarget.value)} /></label>
      <button type="submit" disabled={action.busy}>Recover</button>
      <ProblemNote problem={action.problem} />
      <Done text={action.done} />
    </form>
  );
}

function Deliveries({ endpoint, changed, sent }: { endpoint: Endpoint; changed: () => void; sent: number }) {
  const query = useQuery();
  const status = query.get('deliveries') as '' | Schemas['WebhookDeliveryStatus'];
  const event = query.get('event') || undefined;
  return (
    <section aria-labelledby="deliveries-title">
      <h3 id="deliveries-title">Deliveries</h3>
      <DeliveryList key={status} endpoint={endpoint} status={status} changed={changed} sent={sent} event={event} setEvent={(id) => query.set({ event: id }, { replace: true })} setStatus={(s) => query.set({ deliveries: s, event: undefined }, { replace: true })} />
      {event && <EventDetail key={event} id={event} />}
    </section>
  );
}

function DeliveryList({ endpoint, status, changed, sent, event, setEvent, setStatus }: {
  endpoint: Endpoint;
  status: '' | Schemas['WebhookDeliveryStatus'];
  changed: () => void;
  sent: number;
  event: string | undefined;
  setEvent: (id: string | undefined) => void;
  setStatus: (s: string) => void;
}) {
  const paging = useCursor();
  const page = useLoad(async () => {
    const query = { limit: 25, status: status || undefined, starting_after: paging.cursor };
    return (await api.GET('/api/v1/webhook-endpoints/{endpoint_id}/deliveries', { params: { path: { endpoint_id: endpoint.id }, query } })).data;
  }, [endpoint.id, paging.cursor, sent]);
  const action = useAction();
  const redeliver = (d: Schemas['WebhookDelivery']) =>
    action.run(async () => {
      await api.POST('/api/v1/events/{event_id}/redeliver', { params: { path: { event_id: d.event_id } }, body: { endpoint_id: endpoint.id } });
      page.reload();
      return `Event ${d.event_id} queued again to this endpoint.`;
    });
  return (
    <>
      <div class="actions">
        <label>
          Status
          <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">Any</option>
            <option value="pending">Pending</option>
            <option value="delivered">Delivered</option>
            <option value="failed">Failed</option>
          </select>
        </label>
        <button type="button" onClick={() => { page.reload(); changed(); }}>Refresh deliveries</button>
      </div>
      <p class="muted">A failed delivery whose event a later delivery to this endpoint got through is marked “recovered”: the receiver has the event.</p>
      <ProblemNote problem={page.problem} />
      <ProblemNote problem={action.problem} />
      <Done text={action.done} />
      {page.data && page.data.data.length === 0 && <p>No deliveries.</p>}
      {page.data && page.data.data.length > 0 && (
        <TableWrap label="Deliveries, newest first">
          <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Made</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            {page.data.data.map((d) => (
              <tr key={d.id} class="delivery-row">
                <td><code>{d.event_type}</code><div class="muted"><code class="wrap">{d.event_id}</code></div></td>
                <td><DeliveryStatus status={d.status} recovered={d.superseded_by !== null} />{d.next_attempt_at && <div class="muted">next <Time at={d.next_attempt_at} /></div>}</td>
                <td>{d.attempt_count}</td>
                <td>{d.last_attempt ? <LastAttempt attempt={d.last_attempt} /> : <span class="muted">none yet</span>}</td>
                <td><Time at={d.created_at} /></td>
                <td>
                  <div class="row-actions">
                    <button type="button" aria-pressed={event === d.event_id} onClick={() => setEvent(event === d.event_id ? undefined : d.event_id)}>Attempts<span class="visually-hidden"> of {d.event_id}</span></button>
                    <button type="button" disabled={action.busy} onClick={() => redeliver(d)}>Redeliver<span class="visually-hidden"> {d.event_id}</span></button>
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </TableWrap>
      )}
      {page.data && <Pager label="Deliveries" hasMore={page.data.pagination.has_more} next={page.data.pagination.next_starting_after} paging={paging} />}
    </>
  );
}

function LastAttempt({ attempt }: { attempt: Schemas['EventDeliveryAttempt'] }) {
  return (
    <>
      {attempt.status_code === null ? <span class="muted">no answer</span> : <Badge value={attempt.status_code} />}
      {attempt.error && <div>{attempt.error}</div>}
      {attempt.response_excerpt && <div><code class="wrap">{attempt.response_excerpt}</code></div>}
    </>
  );
}
