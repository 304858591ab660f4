/**
 * A full garbage collection on demand, where a big batch job has just made a lot of garbage
 * (a report's workbook, its e-mails). The npm start scripts run node with `--expose-gc`;
 * elsewhere (tests, tsx) there is no `gc` and this does nothing.
 *
 * Why by hand: a report's short-lived buffers (the sheet XML going through the zip, the
 * attachment going through base64) outlive the young generation, and V8 frees them only at its
 * next full GC, which it starts after its external-memory limit of new buffers or when the old
 * generation has about doubled. That slack, not live data, was most of a report's peak RSS, and a
 * full GC of the report's heap is short (figures in bench/README.md).
 */
const gc = (globalThis as { gc?: (options?: { type: 'major'; execution: 'sync' }) => void }).gc;

export function collectGarbage(): void {
  gc?.();
}
