import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { createJobQueues, QueueUnavailableError, type JobQueues } from '../../src/jobs/index.ts';
import { createLogger } from '../../src/logger.ts';
import { freePort } from '../ops/helpers.ts';

// Redis frozen (SIGSTOP) keeps the producer's connection open and answers nothing: a job added then
// (a password notice inside a request) must fail once the stall is seen, not at the command timeout.
let server: ChildProcess;
let port: number;
let queues: JobQueues;

/** Adds a job; how it ended. */
const tryAdd = (name: string) => queues.add('mail', name, { n: name }, {}).then(() => 'added' as const, (err: unknown) => err);

before(async () => {
  port = await freePort();
  server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  queues = newQueues();
  for (let i = 0; i < 200 && (await tryAdd('warm')) !== 'added'; i++) await sleep(25);
});
after(async () => {
  server?.kill('SIGCONT');
  server?.kill('SIGKILL');
  await queues?.close();
});

const newQueues = () =>
  createJobQueues({
    redisEndpoint: { options: { host: '127.0.0.1', port }, description: 'freezable redis', stop: async () => {} },
    queues: ['mail'],
    logger: createLogger('silent'),
    retryDelayMs: () => 1000,
    stalledAfterMs: 30_000,
    closeTimeoutMs: 1000,
  });

describe('queueing a job while Redis is frozen (SIGSTOP)', () => {
  test('a producer just made waits for its first connection: not a stall', async () => {
    const fresh = newQueues();
    try {
      await fresh.add('mail', 'first', { n: 'first' }, {});
    } finally {
      await fresh.close();
    }
  });

  test('an add in flight fails as the stall is seen, not at its command timeout; later adds are refused at once; added again after', async () => {
    assert.equal(await tryAdd('before'), 'added');
    server.kill('SIGSTOP');
    let inFlight: unknown;
    let refused: unknown;
    try {
      inFlight = await tryAdd('in flight');
      refused = await tryAdd('after the stall');
    } finally {
      server.kill('SIGCONT');
    }
    // Before the fix both waited for the 3 s command timeout ("Command timed out").
    assert.ok(inFlight instanceof QueueUnavailableError, String(inFlight));
    assert.ok(refused instanceof QueueUnavailableError, String(refused));
    let again: unknown;
    for (let i = 0; i < 200 && (again = await tryAdd('after')) !== 'added'; i++) await sleep(25);
    assert.equal(again, 'added');
    const check = new Redis({ host: '127.0.0.1', port });
    try {
      assert.ok((await check.llen('capi:mail:wait')) >= 4, 'the adds before and after the freeze are queued');
    } finally {
      check.disconnect();
    }
  });
});
