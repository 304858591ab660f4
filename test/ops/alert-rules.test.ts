// docs/prometheus-alerts.yml: rules Prometheus can load, on metrics this server exports (the
// registry's names), with the thresholds issue 47 names.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { parse } from 'yaml';
import '../../src/ops/backlog.ts';
import '../../src/ops/process-registry.ts';
import { registry } from '../../src/ops/metrics.ts';
import { ROOT } from './helpers.ts';

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: { severity: string };
  annotations: { summary: string; description: string };
}

const rules = (parse(readFileSync(path.join(ROOT, 'docs/prometheus-alerts.yml'), 'utf8')) as { groups: Array<{ name: string; rules: Rule[] }> }).groups.flatMap((g) => g.rules);

test('every rule names metrics the server exports, and says what fired', async () => {
  const exported = new Set((await registry.getMetricsAsJSON()).map((m) => m.name));
  for (const rule of rules) {
    const names = rule.expr.match(/\b[a-z_]+(?:_total|_seconds|_due|_active|_alive)\b/g) ?? [];
    assert.ok(names.length > 0, rule.alert);
    for (const name of names) assert.ok(exported.has(name), `${rule.alert}: ${name} is not exported`);
    assert.ok(rule.annotations.summary && rule.annotations.description, rule.alert);
    assert.match(rule.labels.severity, /^(critical|warning)$/);
  }
});

test('the thresholds issue 47 asks for: no worker for 1 min; oldest due delivery or active report over 5 min', () => {
  const byName = new Map(rules.map((r) => [r.alert, r]));
  assert.match(byName.get('NoWorkerAlive')!.expr, /workers_alive\{role="worker"\}\) == 0$/);
  assert.equal(byName.get('NoWorkerAlive')!.for, '1m');
  assert.match(byName.get('WebhookDeliveriesWaiting')!.expr, /webhook_delivery_oldest_due_seconds\) > 300$/);
  assert.match(byName.get('ReportRunsStuck')!.expr, /report_run_oldest_active_seconds\) > 300$/);
});
