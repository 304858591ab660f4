// Every change of a record is an event (docs/architecture.md "Writes and their events"): only the
// files below may write the tables whose changes the feed tells of, each of them writes the events
// in the change's transaction (recordEvents), and only src/events/store.ts inserts events, under the
// feed's lock that dates them never before the feed's last. A new writer must be added here, on
// purpose, with its events.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const SRC = path.resolve(import.meta.dirname, '../../src');

/** The files that change services, requests, report runs or endpoints, and why each is allowed. */
const WRITERS: Record<string, string> = {
  'services/store.ts': 'inserts services, creates change requests, due cancellations: with recordEvents',
  'services/use-cases.ts': 'create requests and new passwords: with recordEvents',
  'requests/store.ts': 'decisions and what carrying them out changes: with recordEvents',
  'cli/demo.ts': 'the demo data: with recordEvents',
  'cli/demo-examples.ts': 'the contract examples: with recordEvents / recordFixedEvents',
  'cli/imports.ts': 'imported services: with recordEvents',
  'webhooks/endpoint-store.ts': 'endpoints: every change through endpointChange, its event through endpointChanged',
  'webhooks/delivery-store.ts': "an endpoint's delivery figures (told by no event, documented); disabling it: endpointChanged",
  'reports/runs/store.ts': 'report runs; their end records report.completed/report.failed',
  'reports/workbook/store.ts': "a run's workbook deleted (not a field getReport shows as an event's)",
  'events/store.ts': 'the events themselves',
};

const TABLE_WRITE = /\.(service|serviceRequest|reportRun|webhookEndpoint)\.(create|createMany|update|updateMany|upsert|delete|deleteMany)\b|\b(UPDATE|INSERT INTO|DELETE FROM)\s+"(services|service_requests|report_runs|webhook_endpoints)"/;
const EVENT_INSERT = /\.event\.(create|createMany|update|updateMany|upsert)\b|INSERT INTO\s+"events"/;

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? files(path.join(dir, d.name)) : d.name.endsWith('.ts') ? [path.join(dir, d.name)] : []);
}

test('only the listed files write the records the feed tells of; only src/events/store.ts inserts events', () => {
  const writers: string[] = [];
  const eventWriters: string[] = [];
  for (const file of files(SRC)) {
    const code = readFileSync(file, 'utf8');
    const name = path.relative(SRC, file).split(path.sep).join('/');
    if (TABLE_WRITE.test(code)) writers.push(name);
    if (EVENT_INSERT.test(code)) eventWriters.push(name);
  }
  assert.deepEqual(writers.filter((f) => !(f in WRITERS)), [], 'a new writer: list it in WRITERS with the events it records');
  assert.deepEqual(eventWriters, ['events/store.ts'], 'events are inserted only by src/events/store.ts');
});

test('each writer of services or requests records its events', () => {
  for (const file of ['services/store.ts', 'services/use-cases.ts', 'requests/store.ts', 'cli/demo.ts', 'cli/demo-examples.ts', 'cli/imports.ts']) {
    assert.match(readFileSync(path.join(SRC, file), 'utf8'), /recordEvents\(/, file);
  }
});

/** Functions that write endpoints without endpointChanged, and why; a new one fails the test below. */
const ENDPOINT_WRITES_WITHOUT_EVENT: Record<string, string> = {
  'cli/demo-examples.ts putExampleDelivery': "the example endpoint's last_success_at, a delivery figure no event tells of",
};

/** A file's top-level functions, each with its text up to the next one. */
function functionsOf(code: string): Array<{ name: string; body: string }> {
  const starts = [...code.matchAll(/^(?:export )?(?:async )?function (\w+)/gm)];
  return starts.map((m, i) => ({ name: m[1]!, body: code.slice(m.index, starts[i + 1]?.index ?? code.length) }));
}

test('every function that changes a webhook endpoint records its webhook_endpoint.* event (endpointChanged)', () => {
  const ENDPOINT_WRITE = /\.webhookEndpoint\.(create|createMany|update|updateMany|upsert|delete|deleteMany)\b|\b(UPDATE|INSERT INTO|DELETE FROM)\s+"webhook_endpoints"/;
  const silent: string[] = [];
  for (const file of files(SRC)) {
    const name = path.relative(SRC, file).split(path.sep).join('/');
    for (const fn of functionsOf(readFileSync(file, 'utf8'))) {
      // endpointEvent: the same event for a writer that records its events together (`cli demo`).
      if (ENDPOINT_WRITE.test(fn.body) && !/endpointChanged\(|endpointEvent\(/.test(fn.body)) silent.push(`${name} ${fn.name}`);
    }
  }
  assert.deepEqual(silent.filter((f) => !(f in ENDPOINT_WRITES_WITHOUT_EVENT)).sort(), [], 'an endpoint written without its event: call endpointChanged in its transaction');
  assert.deepEqual(Object.keys(ENDPOINT_WRITES_WITHOUT_EVENT).filter((f) => !silent.includes(f)), [], 'an exemption no longer needed: remove it');
});

test('every endpoint change of src/webhooks/endpoint-store.ts runs under the feed\'s lock first (endpointChange)', () => {
  for (const fn of functionsOf(readFileSync(path.join(SRC, 'webhooks/endpoint-store.ts'), 'utf8'))) {
    if (/endpointChanged\(/.test(fn.body) && fn.name !== 'endpointChanged') assert.match(fn.body, /endpointChange\(prisma, scope,/, fn.name);
  }
});
