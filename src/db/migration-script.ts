/**
 * How a migration's script is run (docs/upgrading.md, "Writing a migration"). By default the whole
 * file is one simple-protocol query, so one implicit transaction: it applies entirely or not at
 * all. A file whose first line is NO_TRANSACTION_MARKER runs statement by statement on one
 * session and outside any transaction, which `CREATE INDEX CONCURRENTLY` and batched backfills
 * need; its statements must be safe to run again (`IF NOT EXISTS`), since a failure leaves the
 * earlier ones applied.
 */
export const NO_TRANSACTION_MARKER = '-- migrate:no-transaction';

export function runsOutsideTransaction(script: string): boolean {
  return script.replace(/^\uFEFF/, '').split(/\r?\n/, 1)[0]!.trim() === NO_TRANSACTION_MARKER;
}

/**
 * The script's statements, split at each `;` outside quotes ('…', E'…', "…", $tag$…$tag$) and
 * comments; pieces holding only comments and blanks are dropped.
 */
export function splitStatements(script: string): string[] {
  const statements: string[] = [];
  let start = 0;
  let meaningful = false;
  let i = 0;
  const push = (end: number) => {
    if (meaningful) statements.push(script.slice(start, end).trim());
    start = end + 1;
    meaningful = false;
  };
  while (i < script.length) {
    const c = script[i]!;
    const next = script[i + 1];
    if (c === '-' && next === '-') {
      const eol = script.indexOf('\n', i);
      i = eol === -1 ? script.length : eol + 1;
    } else if (c === '/' && next === '*') {
      let depth = 1;
      i += 2;
      while (i < script.length && depth > 0) {
        if (script.startsWith('/*', i)) {
          depth++;
          i += 2;
        } else if (script.startsWith('*/', i)) {
          depth--;
          i += 2;
        } else {
          i++;
        }
      }
    } else if (c === "'" || c === '"') {
      const escapes = c === "'" && /[eE]/.test(script[i - 1] ?? '') && !/[\w$]/.test(script[i - 2] ?? '');
      meaningful = true;
      i++;
      while (i < script.length) {
        if (escapes && script[i] === '\\') i += 2;
        else if (script[i] === c && script[i + 1] === c) i += 2;
        else if (script[i] === c) break;
        else i++;
      }
      i++;
    } else if (c === '$' && !/[\w$]/.test(script[i - 1] ?? '')) {
      const tag = /^\$[A-Za-z_]?\w*\$/.exec(script.slice(i))?.[0];
      meaningful = true;
      if (tag === undefined) {
        i++;
      } else {
        const close = script.indexOf(tag, i + tag.length);
        i = close === -1 ? script.length : close + tag.length;
      }
    } else if (c === ';') {
      push(i);
      i++;
    } else {
      if (!/\s/.test(c)) meaningful = true;
      i++;
    }
  }
  push(script.length);
  return statements;
}
