// Preload of bench/thread-allocations.ts: in worker threads only, counts the Buffers of 4 KiB or
// more that Buffer.alloc/allocUnsafe/allocUnsafeSlow/concat/from(string) make, by their callers.
import { Buffer } from 'node:buffer';
import { writeFileSync } from 'node:fs';
import { setInterval } from 'node:timers';
import { isMainThread, threadId } from 'node:worker_threads';

if (!isMainThread) {
  const counts = new Map();
  const note = (kind, bytes) => {
    if (bytes < 4096) return;
    const frames = new Error().stack.split('\n').slice(3, 7).map((l) => l.trim().replace(/^at /, '').replace(/\(.*\/((?:node_modules\/[^/]+|src|dist)\/[^)]*)\)/, '($1)'));
    const key = `${kind} ${frames.join(' < ')}`;
    const c = counts.get(key) ?? { n: 0, bytes: 0 };
    c.n += 1;
    c.bytes += bytes;
    counts.set(key, c);
  };
  const wrap = (name, size) => {
    const original = Buffer[name];
    Buffer[name] = function (...args) {
      const made = original.apply(this, args);
      note(name, size(made, args));
      return made;
    };
  };
  wrap('alloc', (b) => b.length);
  wrap('allocUnsafe', (b) => b.length);
  wrap('allocUnsafeSlow', (b) => b.length);
  wrap('concat', (b) => b.length);
  wrap('from', (b, args) => (typeof args[0] === 'string' ? b.length : 0));
  const dump = () => {
    const rows = [...counts.entries()].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, 25);
    writeFileSync(`/tmp/thread-allocations-${process.pid}-${threadId}.txt`, rows.map(([k, v]) => `${(v.bytes / 1048576).toFixed(1)} MB ${v.n}x ${k}`).join('\n') + '\n');
  };
  process.on('exit', dump);
  setInterval(dump, 1000).unref();
}
