/** The parts every view uses: loading, refusals, JSON, times, copying, paging. */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { moves, navigate } from './router.ts';
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

const formatter = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

export function Time({ at }: { at: string | null | undefined }) {
  if (!at) return <span class="muted">—</span>;
  return <time dateTime={at} title={at}>{formatter.format(new Date(at))}</time>;
}

/** A `datetime-local` field's value as an ISO timestamp (the browser's time zone), or undefined when empty. */
export function isoFromLocal(value: string): string | undefined {
  if (!value) return undefined;
  const at = new Date(value);
  return Number.isNaN(at.getTime()) ? undefined : at.toISOString();
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
