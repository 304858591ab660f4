/**
 * A time chart drawn by uPlot (bundled, its stylesheet with console.css), with its text alternative:
 * a sentence naming the worst bucket and a table of every bucket, so the chart's figures reach a
 * screen reader, a keyboard and a copy-and-paste alike.
 */
import uPlot from 'uplot';
import { useEffect, useRef } from 'preact/hooks';
import { TableWrap } from './ui.tsx';

interface ChartSeries {
  label: string;
  /** One value a bucket; null where the bucket has none (no line is drawn there). */
  values: Array<number | null>;
  /** A class of console.css for the legend's key; its colour is `color`. */
  key: 'blue' | 'red' | 'green' | 'amber';
  /** Which axis: the left one (counts, milliseconds) or the right one (percent). */
  axis?: 'left' | 'percent';
  unit?: string;
}

// The legend keys' colours (console.css .key-*), each with at least 3:1 contrast on white.
const COLOR: Record<ChartSeries['key'], string> = { blue: '#0b57d0', red: '#b91c1c', green: '#15803d', amber: '#b45309' };

/** Whole buckets' starts (ISO) as uPlot's seconds. */
const seconds = (starts: string[]) => starts.map((s) => Date.parse(s) / 1000);

function options(series: ChartSeries[], leftUnit: string, width: number): uPlot.Options {
  const percent = series.some((s) => s.axis === 'percent');
  return {
    width,
    height: 220,
    legend: { show: false },
    cursor: { drag: { x: false, y: false } },
    // Counts and milliseconds from zero, so a quiet hour does not look like a fall.
    scales: { x: { time: true }, [leftUnit]: { range: (_u, _min, max) => [0, Math.max(1, max)] }, percent: { range: [0, 100] } },
    series: [
      {},
      ...series.map((s) => ({ label: s.label, stroke: COLOR[s.key], width: 2, scale: s.axis === 'percent' ? 'percent' : leftUnit, spanGaps: false, points: { show: true, size: 5 } })),
    ],
    axes: [
      { stroke: '#1b1f24', grid: { stroke: '#e5e7eb' } },
      { scale: leftUnit, stroke: '#1b1f24', grid: { stroke: '#e5e7eb' }, label: leftUnit },
      ...(percent ? [{ scale: 'percent', side: 1 as const, stroke: '#1b1f24', grid: { show: false }, label: '%' }] : []),
    ],
  };
}

export function TimeChart({ title, starts, series, leftUnit, summary, bucketLabel }: {
  title: string;
  /** Each bucket's start (ISO), oldest first. */
  starts: string[];
  series: ChartSeries[];
  leftUnit: string;
  /** The sentence a reader gets first: what the chart shows at its worst. */
  summary: string;
  bucketLabel: (start: string) => string;
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>(undefined);
  const data: uPlot.AlignedData = [seconds(starts), ...series.map((s) => s.values)];
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    plot.current = new uPlot(options(series, leftUnit, Math.max(200, el.clientWidth)), data, el);
    // The chart follows its column's width (the detail beside the list, a phone turned).
    const resize = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(200, el.clientWidth), height: 220 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
    };
  }, [series.map((s) => s.label).join()]);
  useEffect(() => plot.current?.setData(data), [JSON.stringify(data)]);
  return (
    <figure class="chart">
      <figcaption>
        <strong>{title}</strong>
        <ul class="chart-keys">
          {series.map((s) => <li key={s.label}><span class={`key key-${s.key}`} aria-hidden="true" />{s.label}{s.axis === 'percent' ? ' (right axis, %)' : ''}</li>)}
        </ul>
      </figcaption>
      <div class="chart-plot" ref={box} aria-hidden="true" />
      <p class="chart-summary">{summary}</p>
      <details class="chart-table">
        <summary>The figures of “{title}”</summary>
        <TableWrap label={`${title}, oldest first`}>
          <thead><tr><th scope="col">From</th>{series.map((s) => <th key={s.label} scope="col">{s.label}</th>)}</tr></thead>
          <tbody>
            {starts.map((start, i) => (
              <tr key={start}>
                <td><time dateTime={start}>{bucketLabel(start)}</time></td>
                {series.map((s) => <td key={s.label}>{s.values[i] == null ? '—' : `${s.values[i]}${s.unit ?? ''}`}</td>)}
              </tr>
            ))}
          </tbody>
        </TableWrap>
      </details>
    </figure>
  );
}

/** A share in percent, to one decimal; null when there is nothing to share. */
export const percentOf = (part: number, whole: number): number | null => (whole === 0 ? null : Math.round((part / whole) * 1000) / 10);
