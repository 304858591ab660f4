/** The parts every view uses: loading, refusals, JSON, times, copying, paging. */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { moves, navigate, useQuery } from './router.ts';
import { problemOf, type Problem } from './api.ts';

export interface Loaded<T> {
  data: T | undefined;
  problem: Problem | undefined;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` whenever `deps` change (or `reload` is called) and keeps its latest answer. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; problem?: Problem; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let current = true;
    setState((s) => ({ data: s.data, loading: true }));
    load().then(
      (data) => current && setState({ data, loading: false }),
      (err: unknown) => current && setState({ problem: problemOf(err), loading: false }),
    );
    return () => {
      current = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data: state.data, problem: state.problem, loading: state.loading, reload };
}

/** One action at a time with its outcome: what went wrong, or a line saying what was done. */
export function useAction(): {
  busy: boolean;
  problem: Problem | undefined;
  done: string | undefined;
  run: (what: () => Promise<string | undefined>) => Promise<void>;
} {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Problem>();
  const [done, setDone] = useState<string>();
  const run = useCallback(async (what: () => Promise<string | undefined>) => {
    setBusy(true);
    setProblem(undefined);
    setDone(undefined);
    try {
      setDone(await what());
    } catch (err) {
      setProblem(problemOf(err));
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, problem, done, run };
}

export function ProblemNote({ problem, title = 'The API refused this' }: { problem: Problem | undefined; title?: string }) {
  if (!problem) return null;
  if (problem.status === 401) {
    return (
      <div class="problem" role="alert">
        <p><strong>Your console session has ended.</strong> Open a new console link (<code>POST /api/v1/console-sessions</code>).</p>
      </div>
    );
  }
  return (
    <div class="problem" role="alert">
      <p>
        <strong>{title}:</strong> {problem.status !== undefined ? `${problem.status} ` : ''}<code>{problem.code}</code> {problem.message}
      </p>
      {problem.details && <Json label="Details" value={problem.details} />}
      {problem.requestId && <p class="muted">Request id <code>{problem.requestId}</code></p>}
    </div>
  );
}

export function Done({ text }: { text: string | undefined }) {
  return <p class="done" role="status">{text ?? ''}</p>;
}

export function Json({ value, label }: { value: unknown; label: string }) {
  return (
    <figure class="json">
      <figcaption>{label}</figcaption>
      <pre tabIndex={0}>{JSON.stringify(value, null, 2)}</pre>
    </figure>
  );
}

/** The browser's time zone, by its IANA name (Europe/Berlin), as the header names it. */
export const TIME_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

const formatter = new Intl.DateTimeFormat(undefined, {
  year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'short',
});

/** An instant in UTC, to the second: `2026-12-02 10:49:48 UTC`. */
const utcText = (at: string): string => `${new Date(at).toISOString().slice(0, 19).replace('T', ' ')} UTC`;

/** A time in the browser's time zone, named; UTC on hover, and beside it with `utc` (the details). */
export function Time({ at, utc }: { at: string | null | undefined; utc?: boolean }) {
  if (!at) return <span class="muted">—</span>;
  return (
    <>
      <time dateTime={at} title={utcText(at)}>{formatter.format(new Date(at))}</time>
      {utc && <span class="muted utc"> ({utcText(at)})</span>}
    </>
  );
}

/** A `datetime-local` field's value as an ISO timestamp (the browser's time zone), or undefined when empty. */
export function isoFromLocal(value: string): string | undefined {
  if (!value) return undefined;
  const at = new Date(value);
  return Number.isNaN(at.getTime()) ? undefined : at.toISOString();
}

/** An ISO timestamp as a `datetime-local` field shows it (the browser's time zone, to the second); '' for none. */
export function localFromIso(iso: string): string {
  const at = new Date(iso);
  if (!iso || Number.isNaN(at.getTime())) return '';
  const p = (n: number) => String(n).padStart(2, '0');
  return `${at.getFullYear()}-${p(at.getMonth() + 1)}-${p(at.getDate())}T${p(at.getHours())}:${p(at.getMinutes())}:${p(at.getSeconds())}`;
}

/** Copies `text`; where the browser refuses the clipboard, selects the text for the user to copy. */
export function CopyText({ text, label }: { text: string; label: string }) {
  const [said, setSaid] = useState('');
  const ref = useRef<HTMLPreElement>(null);
  const copy = () => {
    const select = () => {
      const range = document.createRange();
      if (ref.current) range.selectNodeContents(ref.current);
      getSelection()?.removeAllRanges();
      getSelection()?.addRange(range);
      setSaid('Selected: press Ctrl+C (⌘C) to copy.');
    };
    if (!navigator.clipboard) return select();
    navigator.clipboard.writeText(text).then(() => setSaid('Copied.'), select);
  };
  return (
    <div class="copy">
      <pre ref={ref} tabIndex={0} aria-label={label}>{text}</pre>
      <button type="button" onClick={copy}>Copy {label.toLowerCase()}</button>
      <span role="status" class="muted">{said}</span>
    </div>
  );
}

/** Cursor paging: the cursors of the pages before this one, so "Newer" goes back. */
export function useCursor(): {
  cursor: string | undefined;
  older: (next: string | null | undefined) => void;
  newer: () => void;
  reset: () => void;
  first: boolean;
} {
  const [stack, setStack] = useState<Array<string | undefined>>([undefined]);
  const cursor = stack[stack.length - 1];
  return {
    cursor,
    first: stack.length === 1,
    older: (next) => next && setStack((s) => [...s, next]),
    newer: () => setStack((s) => (s.length > 1 ? s.slice(0, -1) : s)),
    reset: () => setStack([undefined]),
  };
}

export function Pager({ hasMore, next, paging, label }: { hasMore: boolean; next: string | null | undefined; paging: ReturnType<typeof useCursor>; label: string }) {
  return (
    <nav class="pager" aria-label={`${label} pages`}>
      <button type="button" disabled={paging.first} onClick={paging.newer}>Newer</button>
      <button type="button" disabled={!hasMore} onClick={() => paging.older(next)}>Older</button>
    </nav>
  );
}

/**
 * A table that turns into one card per row on a narrow screen (console.css): each cell is labelled
 * there with its column's heading, copied here into `data-label` after every render.
 */
export function TableWrap({ label, children }: { label: string; children: ComponentChildren }) {
  const ref = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    const heads = [...(ref.current?.querySelectorAll('thead th') ?? [])].map((th) => th.textContent ?? '');
    for (const row of ref.current?.querySelectorAll('tbody tr') ?? []) {
      [...row.children].forEach((cell, i) => {
        if ((cell as HTMLTableCellElement).colSpan === 1 && heads[i] && !cell.querySelector(':scope > .visually-hidden:only-child')) cell.setAttribute('data-label', heads[i]!);
      });
    }
  });
  return (
    <div class="table-wrap" role="region" aria-label={label} tabIndex={0} ref={ref}>
      <table>
        <caption class="visually-hidden">{label}</caption>
        {children}
      </table>
    </div>
  );
}

const TONE: Record<string, string> = {
  delivered: 'good', succeeded: 'good', active: 'good', enabled: 'good', approved: 'good', sent: 'good', completed: 'good',
  failed: 'bad', disabled: 'bad', denied: 'bad', cancelled: 'bad', suspended: 'bad',
};

export function Badge({ value }: { value: string | number }) {
  const text = String(value);
  const tone = TONE[text] ?? (/^[45]\d\d$/.test(text) ? 'bad' : /^2\d\d$/.test(text) ? 'good' : 'plain');
  return <span class={`badge ${tone}`}>{text}</span>;
}

export function Link({ href, children, current }: { href: string; children: ComponentChildren; current?: boolean }) {
  const follow = (e: MouseEvent) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(href);
  };
  return <a href={href} onClick={follow} aria-current={current ? 'page' : undefined}>{children}</a>;
}

/** The view's heading, focused when the user opens another view, so keyboard and screen-reader users land on it. */
export function ViewHeading({ children }: { children: ComponentChildren }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    if (moves.count > 0) ref.current?.focus();
  }, []);
  return <h1 ref={ref} tabIndex={-1}>{children}</h1>;
}

/** The list's offset, held in the URL (`?offset=…`, none on the first page), for OffsetPager. */
export function useQueryOffset(): { offset: number; setOffset: (n: number) => void } {
  const query = useQuery();
  return {
    offset: Math.max(0, Number.parseInt(query.get('offset'), 10) || 0),
    setOffset: (n) => query.set({ offset: n > 0 ? String(n) : undefined }),
  };
}

/** Offset paging (services, requests, endpoints): the position and total the API gives. */
export function OffsetPager({ label, pagination, setOffset }: { label: string; pagination: { total: number; limit: number; offset: number; has_more: boolean }; setOffset: (n: number) => void }) {
  const { total, limit, offset, has_more: hasMore } = pagination;
  return (
    <nav class="pager" aria-label={`${label} pages`}>
      <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - limit))}>Previous</button>
      <span>{total === 0 ? 'none' : `${offset + 1}–${Math.min(offset + limit, total)} of ${total}`}</span>
      <button type="button" disabled={!hasMore} onClick={() => setOffset(offset + limit)}>Next</button>
    </nav>
  );
}

/** Where each view's list was scrolled when an entry opened, so going back returns there. */
const listScroll = new Map<string, number>();

/** The view's open entry, held in its URL (`?open=…`), so a link to it opens it. */
export function useOpenEntry(field = 'open'): { open: string | undefined; show: (id: string) => void; close: () => void } {
  const query = useQuery();
  const open = query.get(field) || undefined;
  return {
    open,
    show: (id) => {
      // Another entry in place of the open one: one step back still returns to the list.
      if (open === undefined) listScroll.set(location.pathname, scrollY);
      query.set({ [field]: id }, { state: { opened: true }, replace: open !== undefined && (history.state as { opened?: boolean } | null)?.opened === true });
    },
    // An entry opened here goes back the way it came, so the browser's Forward opens it again.
    close: () => ((history.state as { opened?: boolean } | null)?.opened ? history.back() : query.set({ [field]: undefined })),
  };
}

/**
 * A list and its open entry: side by side on a wide screen (console.css, from 900 px), the entry in
 * place of the list on a narrow one. Opening moves the focus to the entry's heading and brings it into
 * view; going back (the button, or the browser's Back) returns to the list where it was scrolled, and
 * to the button that opened the entry.
 */
export function SplitView({ open, onBack, list, detail }: { open: string | undefined; onBack: () => void; list: ComponentChildren; detail: ComponentChildren }) {
  const side = useRef<HTMLDivElement>(null);
  const before = useRef(open);
  useLayoutEffect(() => {
    const was = before.current;
    before.current = open;
    if (open !== undefined && open !== was && side.current) {
      side.current.querySelector<HTMLElement>('.detail-heading')?.focus({ preventScroll: true });
      const top = side.current.getBoundingClientRect().top;
      if (top < 0 || top > innerHeight / 2) side.current.scrollIntoView({ block: 'start' });
    } else if (open === undefined && was !== undefined) {
      scrollTo(0, listScroll.get(location.pathname) ?? 0);
      document.querySelector<HTMLElement>(`[data-opens="${CSS.escape(was)}"]`)?.focus({ preventScroll: true });
    }
  }, [open]);
  return (
    <div class={open === undefined ? 'split' : 'split has-detail'}>
      <div class="split-list">{list}</div>
      {open !== undefined && (
        <div class="split-detail" ref={side}>
          <button type="button" class="back" onClick={onBack}>Back to the list</button>
          {detail}
        </div>
      )}
    </div>
  );
}
