/**
 * Idempotency-Key on POST (openapi.yaml, "Idempotent retries"), one case per rule: replay, reuse,
 * in use, answer lost, what is kept and what is not, scope, expiry, live and sandbox keys.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Express } from 'express';
import request from 'supertest';
import { createApp } from '../../src/app.ts';
import { fingerprintOf } from '../../src/http/idempotency.ts';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { idempotencyStore, storedKey } from '../../src/idempotency/store.ts';
import type { IdempotencyKeys } from '../../src/shared/idempotency-keys.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { apiKey, broker } from '../helpers/factories.ts';
import { service } from '../helpers/service-factories.ts';

let t: TestApp;
let keys: IdempotencyKeys;
let autoAdmin: { key: string; id: string; brokerId: string };
let manualAdmin: { key: string; id: string; brokerId: string };
let sandbox: { key: string; id: string };

before(async () => {
  t = await createTestApp();
  keys = idempotencyStore(t.prisma);
  const auto = await broker(t.prisma, { approval: 'automatic' });
  const manual = await broker(t.prisma, { approval: 'manual' });
  autoAdmin = await apiKey(t.prisma, { brokerId: auto.id, scopes: ['admin:full'], rateLimit: 10_000 });
  manualAdmin = await apiKey(t.prisma, { brokerId: manual.id, scopes: ['admin:full'], rateLimit: 10_000 });
  sandbox = await apiKey(t.prisma, { brokerId: auto.id, scopes: ['admin:full'], mode: 'test', rateLimit: 10_000 });
});
after(async () => {
  await t?.close();
});

const newService = (hostname = `web-${randomUUID().slice(0, 8)}.client.example`) => ({
  plan: 'Standard VPS',
  hostname,
  customer_email: 'ops@client.example',
  customer_name: 'Client Ltd',
});

function post(key: string, path: string, body: object, idempotencyKey?: string, app: Express = t.app) {
  const req = request(app).post(path).set('Authorization', `Bearer ${key}`);
  if (idempotencyKey !== undefined) req.set('Idempotency-Key', idempotencyKey);
  return req.send(body);
}

const servicesNamed = (hostname: string) => t.prisma.service.count({ where: { hostname } });

describe('a retry with the same key and request', () => {
  test('replays status and body with Idempotent-Replayed, its own X-Request-Id, and runs nothing again', async () => {
    const body = newService();
    const key = randomUUID();
    const first = await post(autoAdmin.key, '/api/v1/service-create', body, key);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.headers['idempotent-replayed'], undefined);
    const retry = await post(autoAdmin.key, '/api/v1/service-create', body, key);
    assert.equal(retry.status, 200);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.deepEqual(retry.body, first.body);
    assert.notEqual(retry.headers['x-request-id'], first.headers['x-request-id']);
    assert.equal(await servicesNamed(body.hostname), 1);
  });

  test('the same body with its fields in another order is the same request', async () => {
    const body = newService();
    const key = randomUUID();
    const first = await post(autoAdmin.key, '/api/v1/service-create', body, key);
    const reordered = Object.fromEntries(Object.entries(body).reverse());
    const retry = await post(autoAdmin.key, '/api/v1/service-create', reordered, key);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.deepEqual(retry.body, first.body);
    assert.equal(await servicesNamed(body.hostname), 1);
  });

  // A report's recipients are the set they normalize to (trimmed, lower-cased, de-duplicated, empty items dropped).
  for (const [operation, path, extra] of [
    ['sendServicesReport', '/api/v1/reports/services', {}],
    ['sendInvoicesReport', '/api/v1/reports/invoices', { start_date: '2025-01-01', end_date: '2025-01-31' }],
  ] as const) {
    test(`${operation}: the same recipients in another order, case or with duplicates is the same request; another set is not`, async () => {
      const key = randomUUID();
      const first = await post(sandbox.key, path, { recipients: ['Ops@Client.example', 'billing@client.example'], ...extra }, key);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      const same = await post(sandbox.key, path, { recipients: [' billing@client.example', '', 'ops@client.example', 'OPS@client.example'], ...extra }, key);
      assert.equal(same.status, 200, JSON.stringify(same.body));
      assert.equal(same.headers['idempotent-replayed'], 'true');
      assert.deepEqual(same.body, first.body);
      const other = await post(sandbox.key, path, { recipients: ['ops@client.example'], ...extra }, key);
      assert.equal(other.status, 422, JSON.stringify(other.body));
      assert.equal(other.body.error.code, 'idempotency_key_reused');
    });
  }

  test('another API process (same database) replays it too', async () => {
    const body = newService();
    const key = randomUUID();
    const first = await post(autoAdmin.key, '/api/v1/service-create', body, key);
    const retry = await post(autoAdmin.key, '/api/v1/service-create', body, key, await t.another());
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.deepEqual(retry.body, first.body);
  });

  test("a 202 change request is replayed: one request row", async () => {
    const s = await service(t, { brokerId: manualAdmin.brokerId, status: 'active', plan: 'Basic VPS' });
    const key = randomUUID();
    const first = await post(manualAdmin.key, `/api/v1/services/${s.serviceNumber}/upgrade`, { plan: 'Standard VPS' }, key);
    assert.equal(first.status, 202, JSON.stringify(first.body));
    const retry = await post(manualAdmin.key, `/api/v1/services/${s.serviceNumber}/upgrade`, { plan: 'Standard VPS' }, key);
    assert.equal(retry.status, 202);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.deepEqual(retry.body, first.body);
    assert.equal(await t.prisma.serviceRequest.count({ where: { serviceId: s.id } }), 1);
  });

  test('a generated password is replayed, and kept only sealed (never as plain text in the database)', async () => {
    const s = await service(t, { brokerId: manualAdmin.brokerId, status: 'active', plan: 'Basic VPS' });
    const key = randomUUID();
    const first = await post(manualAdmin.key, `/api/v1/services/${s.serviceNumber}/password`, {}, key);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const password = first.body.data.password as string;
    assert.equal(typeof password, 'string');
    const [row] = await t.prisma.idempotencyKey.findMany({ where: { key: storedKey(key) } });
    assert.ok(row?.responseBody, 'the answer is recorded');
    assert.ok(!row.responseBody.includes(password), 'the recorded answer does not hold the password in plain text');
    assert.ok(!row.responseBody.includes(String(s.serviceNumber)), 'nor any other part of the answer');
    const retry = await post(manualAdmin.key, `/api/v1/services/${s.serviceNumber}/password`, {}, key);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.equal(retry.body.data.password, password);
  });

  test("an operation's 4xx answer is kept and replayed (404 not_found)", async () => {
    const key = randomUUID();
    const first = await post(manualAdmin.key, '/api/v1/services/999999998/cancel', { reason: 'moving out' }, key);
    assert.equal(first.status, 404);
    const retry = await post(manualAdmin.key, '/api/v1/services/999999998/cancel', { reason: 'moving out' }, key);
    assert.equal(retry.status, 404);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.deepEqual(retry.body, first.body);
  });

  test('a sandbox key: the same simulated answer (the same generated service number), nothing stored', async () => {
    const body = newService();
    const key = randomUUID();
    const first = await post(sandbox.key, '/api/v1/service-create', body, key);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const retry = await post(sandbox.key, '/api/v1/service-create', body, key);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.equal(retry.body.data.service_number, first.body.data.service_number);
    assert.equal(await servicesNamed(body.hostname), 0);
  });
});

describe('without a key, or with a new one', () => {
  test('no key: every request is carried out (two services)', async () => {
    const body = newService();
    await post(autoAdmin.key, '/api/v1/service-create', body);
    const second = await post(autoAdmin.key, '/api/v1/service-create', body);
    assert.equal(second.headers['idempotent-replayed'], undefined);
    assert.equal(await servicesNamed(body.hostname), 2);
  });

  test('a key belongs to its API key: another key with the same value is a new request', async () => {
    const other = await apiKey(t.prisma, { brokerId: autoAdmin.brokerId, scopes: ['admin:full'] });
    const body = newService();
    const key = randomUUID();
    await post(autoAdmin.key, '/api/v1/service-create', body, key);
    const second = await post(other.key, '/api/v1/service-create', body, key);
    assert.equal(second.status, 200);
    assert.equal(second.headers['idempotent-replayed'], undefined);
    assert.equal(await servicesNamed(body.hostname), 2);
  });
});

describe('refused', () => {
  test('the same key with another body: 422 idempotency_key_reused, nothing done', async () => {
    const key = randomUUID();
    const body = newService();
    await post(autoAdmin.key, '/api/v1/service-create', body, key);
    const other = newService();
    const res = await post(autoAdmin.key, '/api/v1/service-create', other, key);
    assert.equal(res.status, 422);
    assert.equal(res.body.error.code, 'idempotency_key_reused');
    assert.equal(res.body.error.details.idempotency_key, key);
    assert.equal(await servicesNamed(other.hostname), 0);
  });

  test('the same key on another operation: 422 idempotency_key_reused', async () => {
    const key = randomUUID();
    await post(autoAdmin.key, '/api/v1/auth-check', {}, key);
    const res = await post(autoAdmin.key, '/api/v1/service-create', newService(), key);
    assert.equal(res.status, 422);
    assert.equal(res.body.error.code, 'idempotency_key_reused');
  });

  test('the same key with another X-Test-Scenario: 422 idempotency_key_reused', async () => {
    const key = randomUUID();
    const body = newService();
    await post(sandbox.key, '/api/v1/service-create', body, key);
    const res = await request(t.app).post('/api/v1/service-create').set('Authorization', `Bearer ${sandbox.key}`)
      .set('Idempotency-Key', key).set('X-Test-Scenario', 'provider_review').send(body);
    assert.equal(res.status, 422);
  });

  for (const [name, value] of [
    ['longer than 255 characters', 'k'.repeat(256)],
    ['with a space', 'two words'],
    ['with a non-ASCII character', 'clé'],
  ] as const) {
    test(`a key ${name}: 400 invalid_parameter, nothing done`, async () => {
      const body = newService();
      const res = await post(autoAdmin.key, '/api/v1/service-create', body, value);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error.code, 'invalid_parameter');
      assert.equal(res.body.error.details.location, 'headers');
      assert.equal(res.body.error.details.field, 'idempotency-key');
      assert.equal(await servicesNamed(body.hostname), 0);
    });
  }
});

describe('a request refused by its input takes no key', () => {
  test('400 first, then the corrected request with the same key is carried out', async () => {
    const key = randomUUID();
    const body = newService();
    const bad = await post(autoAdmin.key, '/api/v1/service-create', { ...body, plan: 'Nope VPS' }, key);
    assert.equal(bad.status, 400);
    const good = await post(autoAdmin.key, '/api/v1/service-create', body, key);
    assert.equal(good.status, 200, JSON.stringify(good.body));
    assert.equal(good.headers['idempotent-replayed'], undefined);
  });
});

describe('answers that ask for a retry are not kept', () => {
  test('a 500 (sandbox server_error) leaves the key free: the retry is carried out again', async () => {
    const key = randomUUID();
    const send = () => request(t.app).post('/api/v1/auth-check').set('Authorization', `Bearer ${sandbox.key}`)
      .set('Idempotency-Key', key).set('X-Test-Scenario', 'server_error').send({});
    const first = await send();
    assert.equal(first.status, 500);
    const retry = await send();
    assert.equal(retry.status, 500);
    assert.equal(retry.headers['idempotent-replayed'], undefined);
    assert.notEqual(retry.body.error.request_id, first.body.error.request_id);
  });
});

describe('simultaneous requests with one key', () => {
  test('exactly one is carried out; the others get its answer or 409 idempotency_key_in_use', async () => {
    const body = newService();
    const key = randomUUID();
    const answers = await Promise.all(Array.from({ length: 8 }, () => post(autoAdmin.key, '/api/v1/service-create', body, key)));
    assert.equal(await servicesNamed(body.hostname), 1);
    const carriedOut = answers.filter((a) => a.status === 200 && a.headers['idempotent-replayed'] === undefined);
    assert.equal(carriedOut.length, 1);
    for (const a of answers) {
      if (a.status === 409) {
        assert.equal(a.body.error.code, 'idempotency_key_in_use');
        assert.equal(a.headers['retry-after'], '1');
      } else {
        assert.equal(a.status, 200);
        assert.deepEqual(a.body, carriedOut[0]!.body);
      }
    }
  });
});

describe('a key whose first request did not finish', () => {
  const cancelPath = (n: number) => `/api/v1/services/${n}/cancel`;
  const fingerprint = (path: string, body: object) =>
    fingerprintOf({ method: 'POST', path, headers: {}, body } as unknown as Parameters<typeof fingerprintOf>[0]);

  test('still within its lease: 409 idempotency_key_in_use with Retry-After', async () => {
    const s = await service(t, { brokerId: manualAdmin.brokerId, status: 'active' });
    const body = { reason: 'moving out', when: 'immediate' };
    const key = randomUUID();
    const held = await keys.claim(manualAdmin.id, key, fingerprint(cancelPath(s.serviceNumber), body), 60_000);
    assert.equal(held.kind, 'run');
    const res = await post(manualAdmin.key, cancelPath(s.serviceNumber), body, key);
    assert.equal(res.status, 409);
    assert.equal(res.body.error.code, 'idempotency_key_in_use');
    assert.equal(res.headers['retry-after'], '1');
  });

  test('its lease over and no effect recorded: the retry is carried out', async () => {
    const s = await service(t, { brokerId: manualAdmin.brokerId, status: 'active' });
    const body = { reason: 'moving out', when: 'immediate' };
    const key = randomUUID();
    await keys.claim(manualAdmin.id, key, fingerprint(cancelPath(s.serviceNumber), body), 1);
    await new Promise((r) => setTimeout(r, 20));
    const res = await post(manualAdmin.key, cancelPath(s.serviceNumber), body, key);
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.equal(await t.prisma.serviceRequest.count({ where: { serviceId: s.id } }), 1);
  });

  test('its effect recorded but not its answer: 409 idempotency_key_answer_lost naming the effect, nothing done again', async () => {
    const s = await service(t, { brokerId: manualAdmin.brokerId, status: 'active' });
    const body = { reason: 'moving out', when: 'immediate' };
    const key = randomUUID();
    const held = await keys.claim(manualAdmin.id, key, fingerprint(cancelPath(s.serviceNumber), body), 1);
    assert.equal(held.kind, 'run');
    if (held.kind !== 'run') return;
    assert.equal(await t.prisma.$transaction((tx) => keys.recordEffect(tx, held.id, held.owner, { type: 'request', id: 'REQ-000043' })), true);
    await new Promise((r) => setTimeout(r, 20));
    const res = await post(manualAdmin.key, cancelPath(s.serviceNumber), body, key);
    assert.equal(res.status, 409);
    assert.equal(res.body.error.code, 'idempotency_key_answer_lost');
    assert.deepEqual(res.body.error.details, { idempotency_key: key, effect_type: 'request', effect_id: 'REQ-000043' });
    assert.equal(await t.prisma.serviceRequest.count({ where: { serviceId: s.id } }), 0);
  });

  test('a request that lost its key to a retry cannot record an effect (the fence)', async () => {
    const key = randomUUID();
    const first = await keys.claim(manualAdmin.id, key, 'f', 1);
    await new Promise((r) => setTimeout(r, 20));
    const second = await keys.claim(manualAdmin.id, key, 'f', 60_000);
    assert.equal(first.kind, 'run');
    assert.equal(second.kind, 'run');
    if (first.kind !== 'run' || second.kind !== 'run') return;
    const effect = { type: 'request', id: 'REQ-000001' } as const;
    assert.equal(await t.prisma.$transaction((tx) => keys.recordEffect(tx, first.id, first.owner, effect)), false);
    assert.equal(await t.prisma.$transaction((tx) => keys.recordEffect(tx, second.id, second.owner, effect)), true);
  });
});

describe('kept 24 hours', () => {
  test('a key older than 24 hours is new again, and is deleted by the purge', async () => {
    const body = newService();
    const key = randomUUID();
    await post(autoAdmin.key, '/api/v1/service-create', body, key);
    await t.prisma.$executeRaw`UPDATE "idempotency_keys" SET "created_at" = now() - interval '25 hours' WHERE "key" = ${storedKey(key)}`;
    const again = await post(autoAdmin.key, '/api/v1/service-create', body, key);
    assert.equal(again.status, 200);
    assert.equal(again.headers['idempotent-replayed'], undefined);
    assert.equal(await servicesNamed(body.hostname), 2);
    await t.prisma.$executeRaw`UPDATE "idempotency_keys" SET "created_at" = now() - interval '25 hours' WHERE "key" = ${storedKey(key)}`;
    assert.ok((await keys.purgeExpired()) >= 1);
    assert.equal(await t.prisma.idempotencyKey.count({ where: { key: storedKey(key) } }), 0);
  });
});

describe('the answer could not be recorded (the database failed after the effect)', () => {
  test('the client still gets its success; a retry gets 409 idempotency_key_answer_lost, and nothing is done twice', async () => {
    const failingFinish: IdempotencyKeys = { ...keys, finish: async () => Promise.reject(new Error('connection terminated')) };
    const app = createApp(t.deps, { idempotency: { keys: failingFinish, leaseMs: 60_000 } });
    const body = newService();
    const key = randomUUID();
    const first = await post(autoAdmin.key, '/api/v1/service-create', body, key, app);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    // Within the lease the first request might still be running; after it, the record says what happened.
    const early = await post(autoAdmin.key, '/api/v1/service-create', body, key, app);
    assert.equal(early.body.error.code, 'idempotency_key_in_use');
    // The lease runs out (moved into the past rather than waited for: a slow machine must not
    // let it run out before the check above).
    await t.prisma.$executeRaw`UPDATE "idempotency_keys" SET "locked_until" = now() - interval '1 second' WHERE "key" = ${storedKey(key)}`;
    const retry = await post(autoAdmin.key, '/api/v1/service-create', body, key, app);
    assert.equal(retry.status, 409);
    assert.equal(retry.body.error.code, 'idempotency_key_answer_lost');
    assert.deepEqual(retry.body.error.details, {
      idempotency_key: key,
      effect_type: 'service',
      effect_id: String(first.body.data.service_number),
    });
    assert.equal(await servicesNamed(body.hostname), 1);
  });

  test('an operation that failed before its effect leaves the key free (503 for the lost connection, then carried out)', async () => {
    let failures = 1;
    // The first attempt's effect transaction fails as a lost connection would; it rolls back whole.
    const flaky: IdempotencyKeys = {
      ...keys,
      recordEffect: async (tx, id, owner, effect) => {
        if (failures-- > 0) throw new Error('connection terminated');
        return keys.recordEffect(tx, id, owner, effect);
      },
    };
    const app = createApp(t.deps, { idempotency: { keys: flaky } });
    const s = await service(t, { brokerId: manualAdmin.brokerId, status: 'active' });
    const key = randomUUID();
    const body = { reason: 'moving out', when: 'immediate' };
    const first = await post(manualAdmin.key, `/api/v1/services/${s.serviceNumber}/cancel`, body, key, app);
    // A lost connection is an outage since issue 45: 503 with Retry-After, nothing done.
    assert.equal(first.status, 503);
    assert.equal(first.body.error.code, 'service_unavailable');
    assert.match(String(first.headers['retry-after']), /^[1-9]\d*$/);
    assert.equal(await t.prisma.serviceRequest.count({ where: { serviceId: s.id } }), 0);
    const retry = await post(manualAdmin.key, `/api/v1/services/${s.serviceNumber}/cancel`, body, key, app);
    assert.equal(retry.status, 202, JSON.stringify(retry.body));
    assert.equal(retry.headers['idempotent-replayed'], undefined);
    assert.equal(await t.prisma.serviceRequest.count({ where: { serviceId: s.id } }), 1);
  });
});

describe('the header value is never stored (issue 21 row 10)', () => {
  test('the row holds its SHA-256; a retry finds it; the value appears nowhere in the table', async () => {
    const key = `order-4711-${randomUUID()}`;
    const body = newService();
    assert.equal((await post(autoAdmin.key, '/api/v1/service-create', body, key)).status, 200);
    const retry = await post(autoAdmin.key, '/api/v1/service-create', body, key);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.equal(await t.prisma.idempotencyKey.count({ where: { key } }), 0);
    const [row] = await t.prisma.idempotencyKey.findMany({ where: { key: storedKey(key) } });
    assert.ok(row);
    assert.match(row.key, /^[0-9a-f]{64}$/);
    const rows = await t.prisma.$queryRaw<Array<{ n: bigint }>>`SELECT count(*) AS n FROM "idempotency_keys" WHERE "idempotency_keys"::text LIKE ${`%${key}%`}`;
    assert.equal(Number(rows[0]!.n), 0);
  });

  test("the migration hashes rows written before it, so their retries still replay", async () => {
    const dir = path.join('prisma', 'migrations', readdirSync(path.join('prisma', 'migrations')).find((d) => d.endsWith('_idempotency_key_hash'))!);
    const sql = readFileSync(path.join(dir, 'migration.sql'), 'utf8');
    const key = `before-the-upgrade-${randomUUID()}`;
    // A key of its own: the migration's statement is run on its rows only.
    const fresh = await apiKey(t.prisma, { scopes: ['admin:full'] });
    const hashed = await t.prisma.$transaction(async (tx) => {
      // A row as the server wrote it before: the value verbatim, its answer recorded.
      await tx.$executeRaw`
        INSERT INTO "idempotency_keys" ("api_key_id", "key", "fingerprint", "status", "owner", "response_status", "response_body")
        VALUES (${fresh.id}, ${key}, 'f', 'done', 'o', 200, '{}')`;
      await tx.$executeRawUnsafe(sql.replace(/;\s*$/, ` WHERE "api_key_id" = '${fresh.id}'`));
      return tx.$queryRaw<Array<{ key: string }>>`SELECT "key" FROM "idempotency_keys" WHERE "api_key_id" = ${fresh.id}`;
    });
    assert.deepEqual(hashed.map((r) => r.key), [storedKey(key)]);
    // The client's retry with the same key now finds that row.
    const claim = await keys.claim(fresh.id, key, 'f', 60_000);
    assert.equal(claim.kind, 'replay');
  });
});
