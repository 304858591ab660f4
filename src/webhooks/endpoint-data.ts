/** An endpoint as the API shows it, in answers and in the `webhook_endpoint.*` events alike: never its secrets. */
import type { WebhookEndpoint } from '../../generated/prisma/client.ts';
import type { components } from '../../generated/api.ts';

export type EndpointData = components['schemas']['WebhookEndpoint'];

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

/** `now`: a previous secret whose time has passed no longer signs, so its time is not shown. */
export function endpointData(row: WebhookEndpoint, now = new Date()): EndpointData {
  return {
    object: 'webhook_endpoint',
    id: row.id,
    url: row.url,
    description: row.description,
    events: row.events as EndpointData['events'],
    status: row.status,
    disabled_reason: row.disabledReason,
    mode: row.mode,
    last_success_at: iso(row.lastSuccessAt),
    last_failure_at: iso(row.lastFailureAt),
    failing_since: iso(row.failingSince),
    consecutive_failures: row.consecutiveFailures,
    previous_secret_expires_at: row.previousSecretExpiresAt && row.previousSecretExpiresAt > now ? row.previousSecretExpiresAt.toISOString() : null,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}
