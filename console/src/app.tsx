/** The console's frame: the broker and mode, the test-mode banner, the navigation and the open view. */
import type { FunctionComponent } from 'preact';
import { session } from './api.ts';
import { BASE, useLocation } from './router.ts';
import { Link, TIME_ZONE } from './ui.tsx';
import { RequestLogs } from './views/request-logs.tsx';
import { Events } from './views/events.tsx';
import { WebhookEndpoints } from './views/webhook-endpoints.tsx';
import { Services } from './views/services.tsx';
import { Requests } from './views/requests.tsx';
import { Reports } from './views/reports.tsx';

/** The views in the navigation's order, named as issue 41 names them. */
export const VIEWS: ReadonlyArray<{ slug: string; name: string; view: FunctionComponent }> = [
  { slug: 'request-logs', name: 'Request logs', view: RequestLogs },
  { slug: 'events', name: 'Events', view: Events },
  { slug: 'webhook-endpoints', name: 'Webhook endpoints', view: WebhookEndpoints },
  { slug: 'services', name: 'Services', view: Services },
  { slug: 'requests', name: 'Requests', view: Requests },
  { slug: 'reports', name: 'Reports', view: Reports },
];

function current(path: string) {
  const slug = path.slice(BASE.length).split('/').filter(Boolean)[0];
  if (slug === undefined) return VIEWS[0];
  return VIEWS.find((v) => v.slug === slug);
}

export function App() {
  const { path } = useLocation();
  const open = current(path);
  const View = open?.view;
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <p class="brand">
          <span>Console</span> <span class="broker">{session.broker}</span>{' '}
          <span class={`mode ${session.mode}`}>{session.mode === 'test' ? 'Test mode' : 'Live'}</span>
          <span class="zone">Times in {TIME_ZONE} (UTC on hover)</span>
        </p>
        {/* Sign out ends the row of views: after them in the keyboard's order as on screen. */}
        <div class="top-row">
          <nav aria-label="Console">
            <ul>
              {VIEWS.map((v) => (
                <li key={v.slug}>
                  <Link href={`${BASE}/${v.slug}`} current={v === open}>{v.name}</Link>
                </li>
              ))}
            </ul>
          </nav>
          <SignOut />
        </div>
      </header>
      {session.mode === 'test' && (
        <p class="test-banner" role="note">
          <strong>Test mode.</strong> You are looking at sandbox data, made with sandbox keys; nothing here is live.
        </p>
      )}
      <main id="main">
        {View ? <View key={open.slug} /> : <NotFound />}
      </main>
    </>
  );
}

/**
 * A plain form, not an API call: the server ends the session (src/console/adapter.ts) and answers
 * the signed-out page, which drops the cookie; it works without the page's script too.
 */
function SignOut() {
  return (
    <form class="sign-out" method="post" action="/console/sign-out">
      <input type="hidden" name="csrf_token" value={session.csrfToken} />
      <button type="submit">Sign out</button>
    </form>
  );
}

function NotFound() {
  return (
    <section>
      <h1>No such view</h1>
      <p>Choose a view in the navigation.</p>
    </section>
  );
}
