import type { components } from './schema.js';
type Event = components['schemas']['Event'];
/** Every event type, for `--events` patterns; the check below fails the build when the contract adds one. */
export declare const EVENT_TYPES: readonly ["service.created", "service.updated", "service.cancelled", "request.created", "request.approved", "request.denied", "report.completed", "report.failed", "ping"];
export interface ListenOptions {
    /** Where the API is, e.g. `https://api.example.com`. */
    baseUrl: string;
    /** An `sk_live_…` or `sk_test_…` key with the `admin:full` scope; never printed. */
    apiKey: string;
    /** The local receiver, e.g. `http://localhost:4000/hooks`. */
    forwardTo: string;
    /** Event type patterns (`*` matches any characters, `service.*`); every type when empty. */
    events: readonly string[];
    /** The session's `whsec_…` secret (newSessionSecret). */
    secret: string;
    /** The wait between two polls of a feed that had nothing more (default 1 s). */
    pollIntervalMs?: number;
    /** Stops listening. */
    signal: AbortSignal;
    /** One line of the session's output (the events forwarded). */
    print: (line: string) => void;
    /** One line about the session itself (ready, connection trouble, waits). */
    note: (line: string) => void;
}
/** A reason to stop that waiting will not cure: a refused key, a bad request, a bad option. */
export declare class ListenError extends Error {
    readonly name = "ListenError";
}
/** A new secret for a session, in the format of an endpoint's: `whsec_` + base64 of 32 random bytes. */
export declare function newSessionSecret(): string;
/** The body of a real delivery: the same JSON, field for field, as the server POSTs (src/webhooks/dispatcher.ts, eventBody). */
export declare function deliveryBody(event: Event): string;
/** Standard Webhooks headers: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the secret's key. */
export declare function signedHeaders(eventId: string, body: string, key: Buffer, at?: Date): Record<string, string>;
/** The options' refusals (ListenError), before anything is printed; the secret's key and the type filter. */
export declare function checkOptions(options: Pick<ListenOptions, 'baseUrl' | 'forwardTo' | 'events' | 'secret'>): {
    key: Buffer;
    wanted: (type: string) => boolean;
};
export interface ListenSummary {
    /** Events POSTed to the receiver (whatever it answered). */
    forwarded: number;
    /** The last event of the feed that was read (forwarded or filtered out). */
    lastEventId: string | undefined;
}
/** Walks the feed from now until the signal stops it, forwarding each event that the patterns match. */
export declare function listen(options: ListenOptions): Promise<ListenSummary>;
export {};
