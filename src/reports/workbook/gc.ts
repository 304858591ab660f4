/**
 * The one place the server asks for a full garbage collection: the build thread once its buffers
 * pass a bound (build-thread.ts), and the API after a workbook's download (delivery/downloads.ts).
 * A workbook's short-lived buffers outlive the young generation and V8 frees them only at its next
 * full collection, so that slack, not live data, made most of a report's peak RSS (bench/README.md).
 * The npm start scripts run node with `--expose-gc`; elsewhere there is no `gc` and this does nothing.
 */
const gc = (globalThis as { gc?: (options?: { type: 'major'; execution: 'sync' }) => void }).gc;

export function collectGarbage(): void {
  gc?.();
}
