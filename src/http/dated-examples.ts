/**
 * Contract examples whose value is only valid near the day it is read, rendered when the contract
 * is served: `recoverWebhookEndpoint`'s `since` is accepted within the 30 days events are kept, so
 * a fixed date in openapi.yaml is refused a month after it was written. Served, it is the start of
 * the current UTC day, which the server accepts all that day and for 30 days after: any tool that
 * sends the served examples (Portman, Newman, Schemathesis…) gets a success, with no extension.
 */

/** Where each dated example's value is, in openapi.yaml (path segments, not a JSON pointer). */
export const DATED_EXAMPLES: ReadonlyArray<readonly string[]> = [
  ['paths', '/api/v1/webhook-endpoints/{endpoint_id}/recover', 'post', 'requestBody', 'content', 'application/json', 'examples', 'since', 'value', 'since'],
];

/** The start of `at`'s UTC day, as the contract's examples write instants. */
export function startOfUtcDay(at: Date): string {
  return `${at.toISOString().slice(0, 10)}T00:00:00Z`;
}

type Json = Record<string, unknown>;

/**
 * The placeholder each dated example has in openapi.yaml. Each must be a date written nowhere else
 * in the contract or the built docs, so a text is dated by replacing it (parsing the 400 kB YAML
 * again to find the value took seconds); throws otherwise, or when an example is not where
 * DATED_EXAMPLES says.
 */
function placeholders(document: Json, texts: readonly string[]): string[] {
  return DATED_EXAMPLES.map((path) => {
    const value = path.reduce<unknown>((node, key) => (typeof node === 'object' && node !== null ? (node as Json)[key] : undefined), document);
    if (typeof value !== 'string' || Number.isNaN(Date.parse(value))) throw new Error(`openapi.yaml has no dated example at ${path.join(' > ')}`);
    for (const text of texts) {
      if (text.split(value).length !== 2) throw new Error(`the dated example ${value} must appear exactly once in each published text`);
    }
    return value;
  });
}

/**
 * Dates published texts (openapi.yaml, its JSON, the built docs): `dated(day)` gives them with each
 * dated example set to `day`, every other byte as it was.
 */
export function datedTexts(document: Json, texts: readonly string[]): (day: string) => string[] {
  const values = placeholders(document, texts);
  return (day) => texts.map((text) => values.reduce((out, value) => out.replace(value, day), text));
}

/** `make`'s value for the current UTC day (by `now`), made again when the day changes. */
export function byDay<T>(now: () => Date, make: (day: string) => T): () => T {
  let made: { day: string; value: T } | undefined;
  return () => {
    const day = startOfUtcDay(now());
    if (made?.day !== day) made = { day, value: make(day) };
    return made.value;
  };
}
