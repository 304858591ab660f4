// The TypeScript receiver of *Receiving webhooks* (a guide tag of openapi.yaml), run as a reader
// would run it: it accepts a delivery signed by the server's own signing (src/webhooks/sign.ts),
// with the old and the new secret during a rotation too, drops a repeat of the same webhook-id,
// and refuses a delivery whose signature or body does not match.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { parse } from 'yaml';
import { newEventId } from '../../src/events/store.ts';
import { newEndpointSecret } from '../../src/webhooks/secrets.ts';
import { signatureHeaders } from '../../src/webhooks/sign.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const DIR = path.join(ROOT, 'var', `receiver-sample-${process.pid}`);
const secret = newEndpointSecret();
let receiver: ChildProcess;
let url: string;
let stdout = '';

/** The ```ts block of the "Receiving webhooks" guide (a tag section of /docs). */
function receiverSample(): string {
  const { tags } = parse(readFileSync(path.join(ROOT, 'openapi.yaml'), 'utf8')) as { tags: Array<{ name: string; description: string }> };
  const section = tags.find((tag) => tag.name === 'Receiving webhooks')?.description ?? '';
  const sample = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(sample, 'the section has a TypeScript sample');
  return sample;
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}

before(async () => {
  mkdirSync(DIR, { recursive: true });
  const file = path.join(DIR, 'receiver.mts');
  writeFileSync(file, receiverSample());
  const port = await freePort();
  url = `http://127.0.0.1:${port}/`;
  receiver = spawn(process.execPath, ['--import', 'tsx', file], { cwd: ROOT, env: { ...process.env, WEBHOOK_SECRET: secret, PORT: String(port) } });
  receiver.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  // Up once it answers (an unsigned request is refused).
  for (let i = 0; ; i++) {
    const answer = await fetch(url, { method: 'POST', body: '{}' }).catch(() => undefined);
    if (answer) break;
    assert.ok(i < 200, 'the receiver sample started');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
});
after(() => {
  receiver?.kill();
  rmSync(DIR, { recursive: true, force: true });
});

function delivery(type: string, secrets: string[] = [secret], id = newEventId()) {
  const body = JSON.stringify({ id, type, created_at: new Date().toISOString(), mode: 'live', data: { object: { service_number: 482913570 } } });
  return { id, body, headers: { 'Content-Type': 'application/json', ...signatureHeaders({ eventId: id, body, secrets }) } };
}

const post = (d: { body: string; headers: Record<string, string> }) => fetch(url, { method: 'POST', headers: d.headers, body: d.body });

test('a signed delivery is accepted (204) and handled once; a repeat of its webhook-id is accepted and not handled again', async () => {
  const d = delivery('service.created');
  assert.equal((await post(d)).status, 204);
  assert.equal((await post(d)).status, 204);
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(stdout.split('\n').filter((line) => line.startsWith('service.created')).length, 1, stdout);
});

test("during a rotation (two signatures, the receiver's secret in either place) it is accepted", async () => {
  assert.equal((await post(delivery('service.updated', [newEndpointSecret(), secret]))).status, 204);
  assert.equal((await post(delivery('service.updated', [secret, newEndpointSecret()]))).status, 204);
});

const refused: Array<[why: string, make: () => { body: string; headers: Record<string, string> }]> = [
  ['signed with another secret', () => delivery('ping', [newEndpointSecret()])],
  ['a body changed after signing', () => {
    const d = delivery('ping');
    return { ...d, body: d.body.replace('482913570', '482913571') };
  }],
  ['no signature headers', () => ({ body: delivery('ping').body, headers: { 'Content-Type': 'application/json' } })],
];
for (const [why, make] of refused) {
  test(`a delivery ${why} is refused (400) and not handled`, async () => {
    const before = stdout;
    assert.equal((await post(make())).status, 400);
    assert.equal(stdout, before);
  });
}
