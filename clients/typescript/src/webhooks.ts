/**
 * Receiving webhooks: `verifyWebhook` checks a delivery's Standard Webhooks signature with the
 * `standardwebhooks` package (vendored into the build, like openapi-fetch) and returns the event,
 * typed by its `type`. A delivery is at least once and in no promised order: skip an event whose
 * `id` (the `webhook-id` header) you have handled, and order by `created_at`.
 *
 *   const event = verifyWebhook(process.env.CAPI_WEBHOOK_SECRET!, rawBody, req.headers);
 *   if (event.type === 'service.created') console.log(event.data.object.service_number);
 */
import { Webhook } from 'standardwebhooks';
import type { components } from './schema.ts';

type Schemas = components['schemas'];

/** The object each event type carries, as the API's own answers show it (never credentials); its `object` names its kind. */
export interface WebhookEventObjects {
  'service.created': Schemas['Service'];
  'service.updated': Schemas['Service'];
  'service.cancelled': Schemas['Service'];
  'request.created': Schemas['ServiceRequest'];
  'request.approved': Schemas['ServiceRequest'];
  'request.denied': Schemas['ServiceRequest'];
  'report.completed': Schemas['ReportRun'];
  'report.failed': Schemas['ReportRun'];
  'webhook_endpoint.created': Schemas['WebhookEndpoint'];
  'webhook_endpoint.updated': Schemas['WebhookEndpoint'];
  'webhook_endpoint.deleted': Schemas['WebhookEndpoint'];
  ping: Schemas['PingObject'];
}

export type WebhookEventType = keyof WebhookEventObjects;

/**
 * One event as delivered: `mode` is `test` for a sandbox key's simulated changes (their objects
 * carry `simulated: true`) and `live` otherwise. Narrow it by `type` to get its object's type.
 */
export type WebhookEvent = {
  [T in WebhookEventType]: {
    object: 'event';
    /** `evt_…`, also the `webhook-id` header: the same on every retry of the event. */
    id: string;
    /** 1, 2, 3… in the broker's feed of this mode: of two events about one object, the higher is the newer (deliveries may arrive out of order). */
    sequence: number;
    type: T;
    created_at: string;
    mode: 'live' | 'test';
    data: { object: WebhookEventObjects[T] };
  };
}[WebhookEventType];

/** Why a delivery was refused. */
export type WebhookRefusal = 'missing_headers' | 'timestamp' | 'signature' | 'body';

/** A delivery that did not verify: answer it with a `4xx` and do not act on it. */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
  readonly reason: WebhookRefusal;

  // A plain field, no parameter property: Node's type stripping (`node file.ts`) refuses those.
  constructor(reason: WebhookRefusal, message: string) {
    super(message);
    this.reason = reason;
  }
}

/** Request headers as Node (`req.headers`), fetch (`Headers`) or a plain object give them. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

const SIGNATURE_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

function headerOf(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : (headers as Record<string, string | string[] | undefined>)[key];
  // A header sent twice is not a delivery of this server's (each is sent once).
  return Array.isArray(value) ? (value.length === 1 ? value[0] : undefined) : value;
}

/** The package's refusals, in this client's words. */
function refusal(err: unknown): WebhookVerificationError {
  const message = err instanceof Error ? err.message : String(err);
  if (/timestamp too (old|new)/i.test(message)) {
    return new WebhookVerificationError('timestamp', 'webhook-timestamp is more than 5 minutes away from this clock: refused as a possible replay (check the clock if every delivery is refused)');
  }
  if (/invalid signature headers/i.test(message)) return new WebhookVerificationError('timestamp', 'webhook-timestamp is not a Unix time in seconds');
  return new WebhookVerificationError('signature', 'webhook-signature does not match the body with this secret (a changed body, or another endpoint\'s secret)');
}

/**
 * Verifies a webhook delivery and returns its event. `secret` is the endpoint's `whsec_…` secret;
 * `rawBody` the request body exactly as received (text or bytes: parsing and serialising it again
 * changes it); `headers` the request's headers. During a secret rotation a delivery carries a
 * signature for each secret, and either secret verifies it. Throws `WebhookVerificationError` for
 * missing headers, a timestamp more than 5 minutes from this clock, or no matching signature.
 */
export function verifyWebhook(secret: string, rawBody: string | Uint8Array, headers: WebhookHeaders): WebhookEvent {
  if (typeof rawBody !== 'string' && !(rawBody instanceof Uint8Array)) {
    throw new TypeError('verifyWebhook needs the raw request body (a string or bytes), not a parsed object');
  }
  const wanted: Record<string, string> = {};
  for (const name of SIGNATURE_HEADERS) {
    const value = headerOf(headers, name);
    if (!value) throw new WebhookVerificationError('missing_headers', `the delivery has no ${name} header`);
    wanted[name] = value;
  }
  // Outside the try: a secret that is not one (empty, not base64) is a mistake of the receiver's, not a refusal.
  const webhook = new Webhook(secret);
  const body = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  try {
    webhook.verify(body, wanted, { jsonParse: false });
  } catch (err) {
    throw refusal(err);
  }
  let event: unknown;
  try {
    event = JSON.parse(body);
  } catch {
    event = undefined;
  }
  if (typeof event !== 'object' || event === null || typeof (event as { type?: unknown }).type !== 'string') {
    throw new WebhookVerificationError('body', 'the signed body is not an event (JSON with a type)');
  }
  return event as WebhookEvent;
}
