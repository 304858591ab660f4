import type { RequestHandler } from 'express';
import type { OperationInfo, ScalarParameter } from './contract.ts';
import { invalidParameter } from './errors.ts';

/**
 * Input rules that JSON Schema validation misses, applied before the validator:
 * - a path or query number is written in plain decimal digits (no leading zero) and fits a safe
 *   integer: the validator coerces with Number(), so `Infinity`, `1e309`, `0x1F`, ` 1` or `007`
 *   would pass as integers;
 * - a boolean is exactly `true` or `false`;
 * - no text anywhere holds U+0000, which PostgreSQL cannot store in a text column, or an unpaired
 *   surrogate (JSON.parse makes one of a `\ud800` escape), which is not Unicode text at all.
 */
/** The operation's path parameters as sent (percent-decoded where that is valid). */
function pathValuesOf(op: OperationInfo, urlPath: string): Map<string, string> {
  const pathValues = new Map<string, string>();
  const match = op.matcher.exec(urlPath);
  op.pathParameters.forEach((name, i) => {
    const raw = match?.[i + 1];
    if (raw === undefined) return;
    try {
      pathValues.set(name, decodeURIComponent(raw));
    } catch {
      pathValues.set(name, raw);
    }
  });
  return pathValues;
}

/**
 * The longest `X-Test-Scenario` value: the known ones are short, and an unknown value behaves as
 * `success`, so a longer one is a mistake (or a probe) that would otherwise be logged and hashed.
 * Checked here rather than by a schema `maxLength`, which the released contract does not carry.
 */
export const MAX_TEST_SCENARIO_LENGTH = 64;

export const inputHygiene: RequestHandler = (req, res, next) => {
  const op = res.locals.operation;
  if (!op) return next();
  const scenario = req.headers['x-test-scenario'];
  if (typeof scenario === 'string' && scenario.length > MAX_TEST_SCENARIO_LENGTH) {
    return next(invalidParameter('x-test-scenario', 'headers', 'maxLength', `must be at most ${MAX_TEST_SCENARIO_LENGTH} characters`));
  }
  const pathValues = op.pathParameters.length > 0 ? pathValuesOf(op, req.baseUrl + req.path) : undefined;

  for (const parameter of op.scalarParameters) {
    const value = parameter.in === 'path' ? pathValues?.get(parameter.name) : req.query[parameter.name];
    if (typeof value !== 'string') continue; // absent, or an array/object the validator refuses
    if (parameter.type === 'boolean') {
      if (value !== 'true' && value !== 'false') return next(invalidParameter(parameter.name, parameter.in, 'type', 'must be true or false'));
      continue;
    }
    const broken = parameter.type === 'integer' ? integerProblem(parameter, value) : /^-?\d{1,16}(\.\d{1,16})?$/.test(value) ? undefined : ['type', 'must be a number written in decimal digits'] as const;
    if (broken) return next(invalidParameter(parameter.name, parameter.in, broken[0], broken[1]));
  }

  const bad = findBadText(req.query, 'query') ?? findBadText(req.body, 'body') ?? (pathValues && badPathValue(pathValues));
  if (bad !== undefined) {
    return next(invalidParameter(bad.field, bad.location, 'characters', bad.text.includes('\u0000') ? NUL_REASON : SURROGATE_REASON));
  }
  next();
};

const NUL_REASON = 'must not contain the NUL character (U+0000)';
const SURROGATE_REASON = 'must not contain an unpaired surrogate (U+D800-U+DFFF): text must be valid Unicode';

/** `String.prototype.isWellFormed` (Node 20+): ES2023, the project's TypeScript lib, does not declare it. */
const isWellFormed = (text: string): boolean => (text as string & { isWellFormed(): boolean }).isWellFormed();

/** Text no field may hold: U+0000 or an unpaired surrogate. */
const isBadText = (text: string): boolean => text.includes('\u0000') || !isWellFormed(text);

/**
 * What is wrong with an integer parameter as written, if anything: not plain decimal digits (a
 * sign, a leading zero, `-0`, anything else) is `type`; plain digits past what a JSON client holds
 * exactly break the schema's bound (`maximum`, `minimum`), as the validator would say of any
 * other number past it.
 */
function integerProblem(parameter: ScalarParameter, value: string): readonly [rule: string, reason: string] | undefined {
  if (!/^(0|-?[1-9]\d*)$/.test(value)) return ['type', 'must be an integer written in plain decimal digits (no leading zero)'];
  if (Number.isSafeInteger(Number(value))) return undefined;
  return value.startsWith('-')
    ? ['minimum', `must be >= ${parameter.minimum ?? Number.MIN_SAFE_INTEGER}`]
    : ['maximum', `must be <= ${parameter.maximum ?? Number.MAX_SAFE_INTEGER}`];
}

/** A key or text value no field may hold, and where it is. */
interface BadText {
  location: string;
  field: string;
  text: string;
}

function badPathValue(values: Map<string, string>): BadText | undefined {
  for (const [field, text] of values) if (isBadText(text)) return { location: 'path', field, text };
  return undefined;
}

/** The first key or text that isBadText (iterative: bodies may nest deeply). */
function findBadText(root: unknown, location: string): BadText | undefined {
  if (root === undefined || root === null) return undefined;
  // The common case, a query string's flat key=value pairs, without the walk's allocations.
  if (typeof root === 'object' && !Array.isArray(root)) {
    let flat = true;
    for (const key of Object.keys(root)) {
      if (isBadText(key)) return { location, field: key, text: key };
      const value = (root as Record<string, unknown>)[key];
      if (typeof value !== 'string') flat = false;
      else if (isBadText(value)) return { location, field: key, text: value };
    }
    if (flat) return undefined;
  }
  const stack: Array<[unknown, string]> = [[root, '']];
  while (stack.length > 0) {
    const [value, at] = stack.pop()!;
    if (typeof value === 'string') {
      if (isBadText(value)) return { location, field: at, text: value };
    } else if (Array.isArray(value)) {
      value.forEach((item, i) => stack.push([item, `${at}[${i}]`]));
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        const field = at === '' ? key : `${at}.${key}`;
        if (isBadText(key)) return { location, field, text: key };
        stack.push([item, field]);
      }
    }
  }
  return undefined;
}
