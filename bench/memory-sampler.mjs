/**
 * A preload that samples every thread's memory of a server, for finding where a peak RSS is:
 * each thread (the main one, report builds, the mail thread) appends a line every 25 ms to
 * `$BENCH_MEMLOG_DIR/<pid>-<threadId>.log`:
 *
 *   <epoch ms> <process RSS MB (main thread only, else -)> <heap used MB> <heap total MB> <external MB> <array buffers MB> <malloced MB>
 *
 * Use it through the report bench, keeping the start script's own flags:
 *
 *   BENCH_MEMLOG_DIR=/tmp/memlog BENCH_NODE_FLAGS="--expose-gc --import ./bench/memory-sampler.mjs" npm run bench:report
 *
 * Worker threads inherit the flag, so each one samples itself. Lines are written 20 at a time.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import process from 'node:process';
import { setInterval } from 'node:timers';
import v8 from 'node:v8';
import { isMainThread, threadId } from 'node:worker_threads';

const dir = process.env.BENCH_MEMLOG_DIR ?? '/tmp/memlog';
mkdirSync(dir, { recursive: true });
const file = `${dir}/${process.pid}-${threadId}.log`;
const MB = 1048576;
let lines = [];
const flush = () => {
  if (lines.length > 0) appendFileSync(file, `${lines.join('\n')}\n`);
  lines = [];
};
setInterval(() => {
  const m = process.memoryUsage();
  const h = v8.getHeapStatistics();
  const mb = (n) => (n / MB).toFixed(1);
  lines.push(`${Date.now()} ${isMainThread ? mb(m.rss) : '-'} ${mb(h.used_heap_size)} ${mb(h.total_heap_size)} ${mb(m.external)} ${mb(m.arrayBuffers)} ${mb(h.malloced_memory)}`);
  if (lines.length >= 20) flush();
}, 25).unref();
process.on('exit', flush);
