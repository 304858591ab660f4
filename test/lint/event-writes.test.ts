// Every change of a record is an event (docs/architecture.md "Writes and their events"). The type
// system holds the Prisma writes: src/ holds a ReadClient (src/shared/db-errors.ts) on which services,
// requests and webhook endpoints are only read, and a writing client exists only inside
// writeWithEvents (src/events/writes.ts), which records the events its change returns; the first
// tests compile a write elsewhere and expect the compiler to refuse it. SQL text is beyond types:
// only the files below may write those tables (or report runs) in raw SQL, and only
// src/events/store.ts inserts events. A new writer must be added here, on purpose, with its events.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';

const SRC = path.resolve(import.meta.dirname, '../../src');

/** Type-checks `files` (path in src/ → text) with the project's options beside the whole of src/; their diagnostics by line. */
function compile(files: Record<string, string>): Map<string, Array<{ line: number; message: string }>> {
  const config = ts.getParsedCommandLineOfConfigFile(path.resolve(SRC, '../tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })!;
  const virtual = new Map(Object.entries(files).map(([name, text]) => [path.join(SRC, name), text]));
  const host = ts.createCompilerHost(config.options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (f) => virtual.has(f) || fileExists(f);
  host.readFile = (f) => virtual.get(f) ?? readFile(f);
  host.getSourceFile = (f, v, ...rest) => (virtual.has(f) ? ts.createSourceFile(f, virtual.get(f)!, v) : getSourceFile(f, v, ...rest));
  const roots = [...virtual.keys(), path.join(SRC, 'events/writes.ts'), path.join(SRC, 'app.ts'), path.join(SRC, 'cli/index.ts'), path.join(SRC, 'main/all.ts')];
  const program = ts.createProgram(roots, { ...config.options, noEmit: true }, host);
  const found = new Map<string, Array<{ line: number; message: string }>>();
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const name = d.file ? path.relative(SRC, d.file.fileName).split(path.sep).join('/') : '(none)';
    const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : 0;
    if (!found.has(name)) found.set(name, []);
    found.get(name)!.push({ line, message: ts.flattenDiagnosticMessageText(d.messageText, ' ') });
  }
  return found;
}

/** A file outside the write module trying every way of writing an evented table with the client src/ holds. */
const OUTSIDE = [
  "import type { Database } from '../db/client.ts';",
  "import type { Db } from '../shared/db-errors.ts';",
  'export async function sneak(db: Database, other: Db): Promise<void> {',
  "  await db.prisma.service.update({ where: { id: 1 }, data: { hostname: 'x' } });",
  "  await db.prisma.serviceRequest.updateManyAndReturn({ where: {}, data: { reason: 'x' } });",
  "  await db.prisma.service.createManyAndReturn({ data: [] });",
  "  await db.prisma.$executeRawUnsafe('UPDATE services SET hostname = $1', 'x');",
  '  await db.prisma.$transaction(async (tx) => {',
  '    await tx.webhookEndpoint.delete({ where: { id: "we_x" } });',
  "    await tx.serviceRequest.createMany({ data: [] });",
  "    await tx.$executeRawUnsafe('DELETE FROM services');",
  '  });',
  "  await other.webhookEndpoint.upsert({ where: { id: 'we_x' }, create: {} as never, update: {} });",
  '  await db.prisma.service.findMany({ take: 1 });',
  '}',
].join('\n');

test('outside src/events/writes.ts a write of services, requests or endpoints does not compile; the module and src/ do', () => {
  const found = compile({ 'services/outside-writer.ts': OUTSIDE });
  const refused = (found.get('services/outside-writer.ts') ?? []).map((d) => d.line);
  // One refusal on each writing line (4-7, 9-11, 13), none on the read (14).
  assert.deepEqual([...new Set(refused)].sort((a, b) => a - b), [4, 5, 6, 7, 9, 10, 11, 13], JSON.stringify(found.get('services/outside-writer.ts'), null, 1));
  for (const d of found.get('services/outside-writer.ts')!) assert.match(d.message, /does not exist on type/, `line ${d.line}: ${d.message}`);
  found.delete('services/outside-writer.ts');
  assert.deepEqual(Object.fromEntries(found), {}, 'src/, the write module included, compiles');
});

test('only src/db/client.ts (which builds it) and src/events/writes.ts name the writing client\'s type; none casts to WriteTx', () => {
  const named: string[] = [];
  for (const file of files(SRC)) {
    const name = path.relative(SRC, file).split(path.sep).join('/');
    const code = readFileSync(file, 'utf8');
    const fromGenerated = [...code.matchAll(/import[^;]*?\{([^}]*)\}\s*from\s*'[./]*generated\/prisma\/client\.ts'/g)].flatMap((m) => m[1]!.split(',').map((x) => x.replace(/^\s*type\s+/, '').trim()));
    if (fromGenerated.includes('PrismaClient') || /\bPrisma\.TransactionClient\b|\bas (unknown as )?WriteTx\b/.test(code)) named.push(name);
  }
  assert.deepEqual(named.sort(), ['db/client.ts', 'events/writes.ts', 'shared/db-errors.ts']);
});

/** The files that change services, requests, report runs or endpoints, and why each is allowed. */
const WRITERS: Record<string, string> = {
  'services/store.ts': 'inserts services, creates change requests, due cancellations: with recordEvents',
  'services/use-cases.ts': 'create requests and new passwords: with recordEvents',
  'requests/store.ts': 'decisions and what carrying them out changes: with recordEvents',
  'cli/demo.ts': 'the demo data: its creations are the events of putContractExamples\' change',
  'cli/demo-examples.ts': 'the contract examples: the events their change returns (the first run\'s with fixed ids)',
  'cli/imports.ts': 'imported services: a service.created each, returned by the import\'s change',
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
