/**
 * Request ids: the public form of a ServiceRequest's integer id is `REQ-` followed by the id,
 * zero-padded to at least six digits (`REQ-000042`, `REQ-1234567`). Paths accept any case
 * (`req-42`) and any padding; answers always use the canonical form.
 */
const REQUEST_ID = /^req-([0-9]+)$/i;

/** The largest id PostgreSQL's `integer` column holds; anything above cannot exist. */
const MAX_DB_ID = 2_147_483_647;

export function formatRequestId(id: number): string {
  return `REQ-${String(id).padStart(6, '0')}`;
}

/**
 * The numeric id in a `REQ-…` string (case-insensitive), or `undefined` when the text is not a
 * request id. A number too large for the database is still a well-formed id: it simply does not
 * exist, so callers answer 404 for it (see `isStorableRequestId`).
 */
export function parseRequestId(text: string): bigint | undefined {
  const match = REQUEST_ID.exec(text.trim());
  return match ? BigInt(match[1]!) : undefined;
}

export function isStorableRequestId(id: bigint): boolean {
  return id >= 1n && id <= BigInt(MAX_DB_ID);
}

/** `REQ-` + the digits of a parsed id, padded to six (for ids that are not stored, e.g. sandbox). */
export function canonicalRequestId(id: bigint): string {
  return `REQ-${id.toString().padStart(6, '0')}`;
}
