// A node:test reporter: the time of each test file's tests in seconds (the sum of its top-level
// tests' durations, as the file's process measured them), slowest first, as JSON. A file's start-up
// and file-level hooks are not in it: the runner reports a file's events in file order, not as they
// happen, so their arrival times cannot time a file. Saved over scripts/test-durations.json after a
// whole run, it is the order scripts/test.mjs starts files in (command in bench/README.md).
import path from 'node:path';

export default async function* durations(source) {
  const files = new Map();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { data } = event;
    if (data.nesting !== 0 || !data.file || data.name === data.file) continue;
    const key = path.relative(process.cwd(), data.file);
    files.set(key, (files.get(key) ?? 0) + (data.details?.duration_ms ?? 0));
  }
  const seconds = [...files]
    .map(([file, ms]) => [file, Math.round(ms / 100) / 10])
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  yield `${JSON.stringify(Object.fromEntries(seconds), null, 2)}\n`;
}
