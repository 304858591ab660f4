import type { components } from './schema.js';
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
        data: {
            object: WebhookEventObjects[T];
        };
    };
}[WebhookEventType];
/** Why a delivery was refused. */
export type WebhookRefusal = 'missing_headers' | 'timestamp' | 'signature' | 'body';
/** A delivery that did not verify: answer it with a `4xx` and do not act on it. */
export declare class WebhookVerificationError extends Error {
    readonly name = "WebhookVerificationError";
    readonly reason: WebhookRefusal;
    constructor(reason: WebhookRefusal, message: string);
}
/** Request headers as Node (`req.headers`), fetch (`Headers`) or a plain object give them. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;
/**
 * Verifies a webhook delivery and returns its event. `secret` is the endpoint's `whsec_…` secret;
 * `rawBody` the request body exactly as received (text or bytes: parsing and serialising it again
 * changes it); `headers` the request's headers. During a secret rotation a delivery carries a
 * signature for each secret, and either secret verifies it. Throws `WebhookVerificationError` for
 * missing headers, a timestamp more than 5 minutes from this clock, or no matching signature.
 */
export declare function verifyWebhook(secret: string, rawBody: string | Uint8Array, headers: WebhookHeaders): WebhookEvent;
export {};
