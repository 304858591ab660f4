// The log destination (pino's sonic-boom, patched in patches/sonic-boom+4.2.1.patch): lines
// logged while a write is in flight are buffered and written in order, whole, in writes of at
// most maxWrite bytes; and buffering them measures each line's bytes once, not the whole buffer
// again per line (that flattened a growing string on every request line under load).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { pino } from 'pino';

const dir = mkdtempSync(path.join(os.tmpdir(), 'capi-log-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function openDestination(file: string, maxWrite: number): Promise<ReturnType<typeof pino.destination>> {
  const destination = pino.destination({ dest: file, sync: false, maxWrite });
  return new Promise((resolve) => destination.once('ready', () => resolve(destination)));
}

test('a burst of lines: all written, in order, whole, each write at most maxWrite bytes', async () => {
  const file = path.join(dir, 'burst.log');
  const maxWrite = 1024;
  const destination = await openDestination(file, maxWrite);
  const writes: number[] = [];
  destination.on('write', (n: number) => writes.push(n));
  // Two- to four-byte characters: maxWrite counts bytes, not characters.
  const lines = Array.from({ length: 600 }, (_, i) => `{"n":${i},"name":"Zoë Ångström 😀 株式会社 ${'x'.repeat(i % 50)}"}\n`);
  for (const line of lines) destination.write(line); // one tick: the first write is in flight for all the rest
  await new Promise<void>((resolve, reject) => {
    destination.once('error', reject);
    destination.end();
    destination.once('close', () => resolve());
  });
  assert.equal(readFileSync(file, 'utf8'), lines.join(''));
  assert.ok(writes.length > 1, 'the burst took more than one write');
  assert.ok(writes.every((n) => n <= maxWrite), `every write at most ${maxWrite} bytes: ${Math.max(...writes)}`);
});

test('buffering a burst measures about each line once, not the growing buffer per line', async () => {
  const file = path.join(dir, 'measured.log');
  const destination = await openDestination(file, 16 * 1024);
  const lines = Array.from({ length: 400 }, (_, i) => `{"level":30,"requestId":"req_${i}","msg":"request completed"}\n`);
  const total = lines.reduce((sum, line) => sum + line.length, 0);
  const byteLength = Buffer.byteLength;
  let measured = 0;
  Buffer.byteLength = ((value: string, encoding?: BufferEncoding) => {
    if (typeof value === 'string') measured += value.length;
    return byteLength(value, encoding);
  }) as typeof Buffer.byteLength;
  try {
    for (const line of lines) destination.write(line);
  } finally {
    Buffer.byteLength = byteLength;
  }
  destination.flushSync();
  destination.end();
  // Before the patch: ~30 × the lines' own size (each line measured the buffer built so far).
  assert.ok(measured <= 2 * total, `measured ${measured} characters for ${total} characters of lines`);
});
