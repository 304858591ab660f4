// A node:test reporter: each test file's wall time in seconds, slowest first, as JSON, from its
// start (the runner dequeues it) to its last event, startup and hooks included. Saved over
// scripts/test-durations.json after a whole run, it is the order scripts/test.mjs starts files in:
//   npm test -- --test-reporter=spec --test-reporter-destination=stdout \
//     --test-reporter=./scripts/test-durations.mjs --test-reporter-destination=scripts/test-durations.json
import path from 'node:path';

export default async function* durations(source) {
  const files = new Map();
  for await (const event of source) {
    const file = event.data?.file;
    if (!file) continue;
    const now = Date.now();
    const key = path.relative(process.cwd(), file);
    const span = files.get(key) ?? { start: undefined, end: now };
    // A file's own dequeue (named by its path) is its start; events before it are its queueing.
    if (event.type === 'test:dequeue' && event.data.name === file) span.start = now;
    if (event.type !== 'test:enqueue') span.start ??= now;
    span.end = now;
    files.set(key, span);
  }
  const seconds = [...files]
    .filter(([, s]) => s.start !== undefined)
    .map(([file, s]) => [file, Math.round((s.end - s.start) / 100) / 10])
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  yield `${JSON.stringify(Object.fromEntries(seconds), null, 2)}\n`;
}
