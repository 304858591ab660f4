/**
 * The one place the server asks for a full garbage collection: the build thread once its buffers
 * pass a bound (build-thread.ts), and the API after a workbook's download (delivery/downloads.ts).
 * A workbook's short-lived buffers outlive the young generation, and V8 frees them only at its next
 * full collection: that slack, not live data, made most of a report's peak RSS (bench/README.md).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// V8 puts `gc` into a context made while --expose-gc is on, so the flag lives here rather than on
// every start script (jest-leak-detector takes gc the same way); it is turned off again at once.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
setFlagsFromString('--no-expose-gc');

export function collectGarbage(): void {
  gc();
}
