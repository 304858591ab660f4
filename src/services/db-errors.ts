/** Recognising the database errors the service code recovers from. */

interface PrismaLikeError {
  code?: unknown;
  meta?: unknown;
  message?: unknown;
}

/**
 * A unique-constraint violation (Prisma `P2002`). With `hint`, only one whose constraint, index
 * or columns mention it (e.g. `service_number`): driver adapters report the target in different
 * places of `meta`, so the whole error is searched.
 */
export function isUniqueViolation(err: unknown, hint?: string): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as PrismaLikeError;
  const isUnique = e.code === 'P2002' || (e.code === '23505');
  if (!isUnique) return false;
  if (hint === undefined) return true;
  let text = typeof e.message === 'string' ? e.message : '';
  try {
    text += JSON.stringify(e.meta ?? {});
  } catch {
    // meta with cycles: the message is all we have
  }
  return text.includes(hint);
}

/** `text` with LIKE wildcards escaped (for `ILIKE … ESCAPE '\'`). */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}
