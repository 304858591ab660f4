/**
 * A full garbage collection on demand, where a big batch job has just made a lot of garbage
 * (a report's workbook, its e-mails). The npm start scripts run node with `--expose-gc`;
 * elsewhere (tests, tsx) there is no `gc` and this does nothing.
 *
 * Why by hand: a report's short-lived buffers (the sheet XML going through the zip, the
 * attachment going through base64) outlive the young generation, and V8 frees them only at its
 * next full GC, which it starts after ~64 MB of new buffers (its external-memory limit) or when
 * the old generation has about doubled. That slack, not live data, was most of a report's peak RSS
 * (bench/README.md). A full GC of the ~50 MB heap takes ~10–30 ms.
 */
const gc = (globalThis as { gc?: (options?: { type: 'major'; execution: 'sync' }) => void }).gc;

export function collectGarbage(): void {
  gc?.();
}

export const canCollectGarbage = gc !== undefined;
