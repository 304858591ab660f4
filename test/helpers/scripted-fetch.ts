// A stand-in fetch for the TypeScript client's tests: answers from a script, records what was sent.

/** A fetch that answers from `answers` in turn and records each request. */
export function scripted(answers: Array<() => Response>) {
  const seen: Request[] = [];
  const fetch = async (input: Request | string | URL) => {
    seen.push(input as Request);
    return answers[seen.length - 1]!();
  };
  return { seen, fetch: fetch as typeof globalThis.fetch };
}

/** A plain `200` of auth-check's shape. */
export const ok = () => new Response(JSON.stringify({ success: true, data: { write_access: true } }), { status: 200, headers: { 'Content-Type': 'application/json' } });
