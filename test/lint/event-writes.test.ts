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
