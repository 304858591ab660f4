/** The event types, for code in a browser as well as in Node (the CLI's `--events` patterns, the console's filters). */
import type { components } from './schema.js';
export type EventType = components['schemas']['EventType'];
/** Every event type; the check below fails the build when the contract adds one this list lacks. */
export declare const EVENT_TYPES: readonly ["service.created", "service.updated", "service.cancelled", "request.created", "request.approved", "request.denied", "report.completed", "report.failed", "webhook_endpoint.created", "webhook_endpoint.updated", "webhook_endpoint.deleted", "ping"];
