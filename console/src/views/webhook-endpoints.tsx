/** "Webhook endpoints": list, create, edit, enable or disable, rotate the secret, ping, deliveries, redeliver, recover. */
import { useState } from 'preact/hooks';
import { api, EVENT_TYPES, type Schemas } from '../api.ts';
import { Badge, CopyText, Done, isoFromLocal, Pager, ProblemNote, TableWrap, Time, useAction, useCursor, useLoad, ViewHeading } from '../ui.tsx';
import { EventDetail } from './events.tsx';

type Endpoint = Schemas['WebhookEndpoint'];

export function WebhookEndpoints() {
  const list = useLoad(async () => (await api.GET('/api/v1/webhook-endpoints', { params: { query: { limit: 100 } } })).data.data, []);
  const [open, setOpen] = useState<string>();
  const [secret, setSecret] = useState<{ id: string; secret: string }>();
  const chosen = list.data?.find((e) => e.id === open);
  return (
    <section aria-labelledby="view-title">
      <ViewHeading><span id="view-title">Webhook endpoints</span></ViewHeading>
      <p class="lede">Where this broker's events are sent, and how each delivery went.</p>
      {secret && <SecretOnce {...secret} onDone={() => setSecret(undefined)} />}
      <ProblemNote problem={list.problem} />
      {list.data && list.data.length === 0 && <p>No endpoints yet.</p>}
      {list.data && list.data.length > 0 && (
        <TableWrap label="Webhook endpoints">
          <thead><tr><th scope="col">URL</th><th scope="col">Status</th><th scope="col">Last success</th><th scope="col">Failures</th><th scope="col"><span class="visually-hidden">Manage</span></th></tr></thead>
          <tbody>
            {list.data.map((e) => (
              <tr key={e.id}>
                <td><code class="wrap">{e.url}</code>{e.description && <div class="muted">{e.description}</div>}</td>
                <td><Badge value={e.status} />{e.disabled_reason && <div class="muted">{e.disabled_reason}</div>}</td>
                <td><Time at={e.last_success_at} /></td>
                <td>{e.consecutive_failures}</td>
                <td>
                  <button type="button" aria-pressed={open === e.id} onClick={() => setOpen(open === e.id ? undefined : e.id)}>
                    {open === e.id ? 'Close' : 'Manage'}<span class="visually-hidden"> {e.url}</span>
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </TableWrap>
      )}
      {chosen && <EndpointPanel key={chosen.id} endpoint={chosen} changed={list.reload} secretShown={(s) => setSecret({ id: chosen.id, secret: s })} />}
      <CreateEndpoint
        created={(e) => {
          setSecret({ id: e.id, secret: e.secret });
          setOpen(e.id);
          list.reload();
        }}
      />
    </section>
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
      return `Ping event ${data.data.id} queued.`;
    });
  return (
    <article class="panel" aria-labelledby="endpoint-title">
      <h2 id="endpoint-title">Endpoint <code>{endpoint.id}</code></h2>
      <dl class="facts">
        <dt>Status</dt><dd><Badge value={endpoint.status} /></dd>
        <dt>Events</dt><dd>{endpoint.events.length === 0 ? 'every type' : endpoint.events.join(', ')}</dd>
        <dt>Last failure</dt><dd><Time at={endpoint.last_failure_at} /></dd>
        <dt>Failing since</dt><dd><Time at={endpoint.failing_since} /></dd>
        <dt>Previous secret valid until</dt><dd><Time at={endpoint.previous_secret_expires_at} /></dd>
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
      <EditEndpoint endpoint={endpoint} changed={changed} />
      <Recover endpoint={endpoint} />
      <Deliveries endpoint={endpoint} changed={changed} />
    </article>
  );
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

function Recover({ endpoint }: { endpoint: Endpoint }) {
  const [since, setSince] = useState('');
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const at = isoFromLocal(since);
      if (!at) return 'Choose a time to recover from.';
      const { data } = await api.POST('/api/v1/webhook-endpoints/{endpoint_id}/recover', { params: { path: { endpoint_id: endpoint.id } }, body: { since: at } });
      const more = data.data.has_more ? ' More remain: recover again from the same time.' : '';
      return `${data.data.queued} failed deliver${data.data.queued === 1 ? 'y' : 'ies'} queued again.${more}`;
    });
  };
  return (
    <form aria-labelledby="recover-endpoint" onSubmit={submit}>
      <h3 id="recover-endpoint">Recover failed deliveries</h3>
      <p class="muted">Sends again every delivery to this endpoint that failed since the time you choose.</p>
      <label>Since<input type="datetime-local" required step={1} value={since} onInput={(e) => setSince(e.currentTarget.value)} /></label>
      <button type="submit" disabled={action.busy}>Recover</button>
      <ProblemNote problem={action.problem} />
      <Done text={action.done} />
    </form>
  );
}

function Deliveries({ endpoint, changed }: { endpoint: Endpoint; changed: () => void }) {
  const [status, setStatus] = useState<'' | Schemas['WebhookDeliveryStatus']>('');
  const [event, setEvent] = useState<string>();
  const paging = useCursor();
  const page = useLoad(async () => {
    const query = { limit: 25, status: status || undefined, starting_after: paging.cursor };
    return (await api.GET('/api/v1/webhook-endpoints/{endpoint_id}/deliveries', { params: { path: { endpoint_id: endpoint.id }, query } })).data;
  }, [endpoint.id, status, paging.cursor]);
  const action = useAction();
  const redeliver = (d: Schemas['WebhookDelivery']) =>
    action.run(async () => {
      await api.POST('/api/v1/events/{event_id}/redeliver', { params: { path: { event_id: d.event_id } }, body: { endpoint_id: endpoint.id } });
      page.reload();
      return `Event ${d.event_id} queued again to this endpoint.`;
    });
  return (
    <section aria-labelledby="deliveries-title">
      <h3 id="deliveries-title">Deliveries</h3>
      <div class="actions">
        <label>
          Status
          <select value={status} onChange={(e) => { paging.reset(); setStatus(e.currentTarget.value as typeof status); }}>
            <option value="">Any</option>
            <option value="pending">Pending</option>
            <option value="delivered">Delivered</option>
            <option value="failed">Failed</option>
          </select>
        </label>
        <button type="button" onClick={() => { page.reload(); changed(); }}>Refresh deliveries</button>
      </div>
      <ProblemNote problem={page.problem} />
      <ProblemNote problem={action.problem} />
      <Done text={action.done} />
      {page.data && page.data.data.length === 0 && <p>No deliveries.</p>}
      {page.data && page.data.data.length > 0 && (
        <TableWrap label="Deliveries, newest first">
          <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Next attempt</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            {page.data.data.map((d) => (
              <tr key={d.id} class="delivery-row">
                <td><code>{d.event_type}</code><div class="muted"><code>{d.event_id}</code></div></td>
                <td><Badge value={d.status} /></td>
                <td>{d.attempt_count}</td>
                <td>{d.last_attempt ? <LastAttempt attempt={d.last_attempt} /> : <span class="muted">none yet</span>}</td>
                <td><Time at={d.next_attempt_at} /></td>
                <td>
                  <div class="row-actions">
                    <button type="button" onClick={() => setEvent(event === d.event_id ? undefined : d.event_id)}>Attempts<span class="visually-hidden"> of {d.event_id}</span></button>
                    <button type="button" disabled={action.busy} onClick={() => redeliver(d)}>Redeliver<span class="visually-hidden"> {d.event_id}</span></button>
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </TableWrap>
      )}
      {page.data && <Pager label="Deliveries" hasMore={page.data.pagination.has_more} next={page.data.pagination.next_starting_after} paging={paging} />}
      {event && <EventDetail key={event} id={event} />}
    </section>
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
