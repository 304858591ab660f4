import type { components } from './schema.js';
type Event = components['schemas']['Event'];
export interface ListenOptions {
    /** Where the API is, e.g. `https://api.example.com`. */
    baseUrl: string;
    /** An `sk_live_…` or `sk_test_…` key with the `admin:full` scope; never printed. */
    apiKey: string;
    /** The local receiver, e.g. `http://localhost:4000/hooks`; another machine only with allowRemoteForward. */
    forwardTo: string;
    /** `--allow-remote-forward`: let forwardTo name a host other than this machine (the events leave it). */
    allowRemoteForward?: boolean;
    /** `--allow-insecure-api`: let baseUrl be `http:` to a host other than this machine (the key travels in clear). */
    allowInsecureApi?: boolean;
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
    constructor(message: string);
}
/**
 * `text` without control characters (C0, DEL, C1) and bidirectional overrides, each shown as `?`:
 * what a server sends (a key name, an event type or id, an error message) must not move the
 * terminal's cursor, change its title or print a line of its own.
 */
export declare function printable(text: string): string;
/** A new secret for a session, in the format of an endpoint's: `whsec_` + base64 of 32 random bytes. */
export declare function newSessionSecret(): string;
/** The body of a real delivery: the same JSON, field for field, as the server POSTs (src/webhooks/dispatcher.ts, eventBody). */
export declare function deliveryBody(event: Event): string;
/** Standard Webhooks headers: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the secret's key. */
export declare function signedHeaders(eventId: string, body: string, key: Buffer, at?: Date): Record<string, string>;
/**
 * Whether the URL's host is this machine as written: `localhost` or a loopback address (127.0.0.0/8,
 * ::1, ::ffff:127.x). A name is not looked up: any other one may be, or become, another machine.
 */
export declare function isLoopbackUrl(url: URL): boolean;
/** The options' refusals (ListenError), before anything is printed; the secret's key and the type filter. */
export declare function checkOptions(options: Pick<ListenOptions, 'baseUrl' | 'forwardTo' | 'events' | 'secret' | 'allowRemoteForward' | 'allowInsecureApi'>): {
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
export declare function listen(given: ListenOptions): Promise<ListenSummary>;
export {};
