// Issue 45 item 5: builds run side by side in one process (2 per worker, more with several
// queues), each in a thread of its own that loads gc.ts. When each thread switched the
// process-wide --expose-gc flag on and off, one build in 139 failed with `gc is not defined`.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { test } from 'node:test';
import { buildWorkbook } from '../../../src/reports/workbook/build.ts';
import { invoiceLine } from '../../../src/reports/workbook/invoice-table.ts';
import type { InvoiceTotals } from '../../../src/reports/types.ts';

const BUILDS = 16;

async function* pagesOf(build: number): AsyncIterable<string> {
  for (let page = 0; page < 3; page++) {
    yield Array.from({ length: 20 }, (_, i) => {
      const id = build * 1000 + page * 20 + i + 1;
      return invoiceLine({ id, number: `INV-${id}`, serviceNumber: 700_000_000 + id, date: '2025-06-02', status: 'paid', amount: '10.00', currency: 'EUR' });
    }).join('\n');
  }
}

test(`${BUILDS} report builds at once in one process all succeed`, async () => {
  const facts = { generatedAt: Date.UTC(2025, 5, 30), startDate: '2025-06-01', endDate: '2025-06-30' };
  const outcomes = await Promise.allSettled(Array.from({ length: BUILDS }, async (_, build) => {
    const out = new PassThrough();
    const bytes = buffer(out);
    const result = await buildWorkbook<InvoiceTotals>('invoices', facts, pagesOf(build), out, { rowsPerSheet: 25 });
    return { ...result, bytes: (await bytes).length };
  }));
  const failed = outcomes.filter((o) => o.status === 'rejected').map((o) => String((o as PromiseRejectedResult).reason));
  assert.deepEqual(failed, []);
  for (const o of outcomes) {
    const { rows, sheets, bytes } = (o as PromiseFulfilledResult<{ rows: number; sheets: number; bytes: number }>).value;
    assert.equal(rows, 60);
    assert.equal(sheets, 3);
    assert.ok(bytes > 0);
  }
});
