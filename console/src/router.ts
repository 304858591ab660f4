/** A router of a few lines: the views are paths under /console, moved between with the History API. */
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/console';

/** Whether the user has moved between views yet (the first view keeps the page's own first focus). */
export const moves = { count: 0 };

export function usePath(): string {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const moved = () => {
      moves.count += 1;
      setPath(location.pathname);
    };
    addEventListener('popstate', moved);
    return () => removeEventListener('popstate', moved);
  }, []);
  return path;
}

export function navigate(to: string): void {
  history.pushState(null, '', to);
  dispatchEvent(new PopStateEvent('popstate'));
}
