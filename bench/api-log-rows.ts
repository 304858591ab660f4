/**
 * The database's cost of an API log row by the indexes of `api_logs`: `npm run bench:api-log-rows`.
 * Every API request writes one row (src/auth/api-log.ts), so this is a cost of every request, paid
 * by the database process beside the API. On an in-memory PGlite per variant: the table as the
 * migrations make it, its indexes as each variant lists them, 30 warm-up INSERTs of 1,000 rows
 * (as the gate's flush writes them: one `jsonb_to_recordset` INSERT), then `BENCH_BATCHES`
 * (default 60) timed ones. Prints µs a row.
 */
import { randomUUID } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';

const BATCHES = Number(process.env.BENCH_BATCHES ?? 60);
const ROWS = 1000;

const KEY_INDEX = 'CREATE INDEX ON api_logs (api_key_id, at)';
const LIST_INDEX = 'CREATE INDEX ON api_logs (broker_id, mode, at, id)';
const variants: Record<string, string[]> = {
  'before request logs (ca82775): key, broker and time': [KEY_INDEX, 'CREATE INDEX ON api_logs (broker_id, at)'],
  'request logs as first built: + B-tree (broker_id, mode, request_id)': [KEY_INDEX, LIST_INDEX, 'CREATE INDEX ON api_logs (broker_id, mode, request_id)'],
  'request logs now: + hash (request_id)': [KEY_INDEX, LIST_INDEX, 'CREATE INDEX ON api_logs USING hash (request_id)'],
  'the same with a B-tree (request_id)': [KEY_INDEX, LIST_INDEX, 'CREATE INDEX ON api_logs (request_id)'],
  'no index but the primary key': [],
};

const TABLE = `
  CREATE TYPE key_mode AS ENUM ('live', 'test');
  CREATE TABLE api_logs (id bigserial PRIMARY KEY, at timestamptz(3) NOT NULL DEFAULT now(), api_key_id text, broker_id text,
    mode key_mode, method text NOT NULL, path text NOT NULL, status int NOT NULL, ip text NOT NULL, duration_ms int NOT NULL,
    request_id text NOT NULL, operation text, error_code text, idempotency_replayed boolean NOT NULL DEFAULT false)`;

const INSERT = `
  INSERT INTO api_logs (at, api_key_id, broker_id, mode, method, path, status, ip, duration_ms, request_id, operation, error_code, idempotency_replayed)
  SELECT x.at, x.api_key_id, x.broker_id, x.mode::key_mode, x.method, x.path, x.status, x.ip, x.duration_ms, x.request_id, x.operation, x.error_code, x.idempotency_replayed
    FROM jsonb_to_recordset($1::jsonb) AS x(at timestamptz(3), api_key_id text, broker_id text, mode text, method text, path text, status int,
         ip text, duration_ms int, request_id text, operation text, error_code text, idempotency_replayed boolean)`;

/** One flush's rows: one key's requests a millisecond apart, each with a request id of its own. */
function batch(start: number): string {
  const rows = Array.from({ length: ROWS }, (_, i) => ({
    at: new Date(start + i).toISOString(),
    api_key_id: 'key_puKIjIQETFhhwoTZF0b4',
    broker_id: 'brk_JPskxTd5txjn2MprcACa',
    mode: 'live',
    method: 'GET',
    path: '/api/v1/auth-check',
    status: 200,
    ip: '127.0.0.1',
    duration_ms: 1,
    request_id: `req_${randomUUID().replaceAll('-', '')}`,
    operation: 'getAuthCheck',
    error_code: null,
    idempotency_replayed: false,
  }));
  return JSON.stringify(rows);
}

const results = [];
for (const [variant, indexes] of Object.entries(variants)) {
  const db = new PGlite();
  await db.exec(TABLE);
  for (const index of indexes) await db.exec(index);
  let at = Date.now();
  for (let i = 0; i < 30; i++) await db.query(INSERT, [batch((at += ROWS))]);
  let ms = 0;
  for (let i = 0; i < BATCHES; i++) {
    const json = batch((at += ROWS));
    const started = performance.now();
    await db.query(INSERT, [json]);
    ms += performance.now() - started;
  }
  results.push({ variant, 'µs a row': ((ms * 1000) / (BATCHES * ROWS)).toFixed(2) });
  await db.close();
}
console.table(results);
