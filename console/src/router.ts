/**
 * A router of a few lines: the views are paths under /console, moved between with the History API;
 * a view's filters and open entry live in its query string, so its URL can be shared.
 */
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/console';

/** Whether the user has moved between views yet (the first view keeps the page's own first focus). */
export const moves = { count: 0 };

/** The page's path and query, again on every move (links, back and forward, a changed query). */
export function useLocation(): { path: string; query: URLSearchParams } {
  const [href, setHref] = useState(location.pathname + location.search);
  useEffect(() => {
    const moved = () => {
      moves.count += 1;
      setHref(location.pathname + location.search);
    };
    addEventListener('popstate', moved);
    return () => removeEventListener('popstate', moved);
  }, []);
  const url = new URL(href, location.origin);
  return { path: url.pathname, query: url.searchParams };
}

export function navigate(to: string): void {
  history.pushState(null, '', to);
  dispatchEvent(new PopStateEvent('popstate'));
}

/** This view's query string: every field read as a string ('' when absent). */
export function useQuery(): { get: (name: string) => string; set: (changes: Record<string, string | undefined>, how?: { state?: object; replace?: boolean }) => void } {
  const { query } = useLocation();
  return {
    get: (name) => query.get(name) ?? '',
    /** A new history entry (or this one, `replace`) with `changes` applied; undefined or '' removes a field. */
    set: (changes, how = {}) => {
      // The URL as it is now, not as this render saw it: two changes in one handler both count.
      const next = new URLSearchParams(location.search);
      for (const [name, value] of Object.entries(changes)) {
        if (value === undefined || value === '') next.delete(name);
        else next.set(name, value);
      }
      const search = next.toString();
      const url = `${location.pathname}${search ? `?${search}` : ''}`;
      if (how.replace) history.replaceState(how.state ?? history.state, '', url);
      else history.pushState(how.state ?? null, '', url);
      dispatchEvent(new PopStateEvent('popstate'));
    },
  };
}
