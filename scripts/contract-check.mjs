#!/usr/bin/env node
// Fails when openapi.yaml breaks the last released contract (the highest
// docs/released/openapi-<version>.yaml) without raising info.version's major. api-smart-diff
// classifies every difference; this script only reads its verdicts.
// Usage: contract-check.mjs [current.yaml [released.yaml]]
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { apiDiff } from 'api-smart-diff';
import { parse } from 'yaml';

const RELEASED_DIR = 'docs/released';

function semver(version) {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(String(version));
  if (!m) throw new Error(`info.version ${version} is not MAJOR.MINOR.PATCH`);
  return m.slice(1).map(Number);
}

const versionOf = (file) => semver(/^openapi-(.+)\.yaml$/.exec(file)[1]);

export function lastReleased(dir = RELEASED_DIR) {
  const files = readdirSync(dir).filter((f) => /^openapi-\d+\.\d+\.\d+\.yaml$/.test(f));
  if (files.length === 0) throw new Error(`no released contract in ${dir}`);
  files.sort((a, b) => {
    const [x, y] = [versionOf(a), versionOf(b)];
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
  });
  return path.join(dir, files.at(-1));
}

// The contract tells clients to ignore response fields they do not know, so a field added to a
// response under `additionalProperties: false` is no break; the tool would otherwise call it one.
function allowAddedFields(node) {
  if (Array.isArray(node)) node.forEach(allowAddedFields);
  else if (node && typeof node === 'object') {
    if (node.additionalProperties === false) delete node.additionalProperties;
    Object.values(node).forEach(allowAddedFields);
  }
  return node;
}

// Words of a schema that only describe it: a schema made of `type` and these accepts every value of
// that type.
const ANNOTATIONS = new Set(['type', 'description', 'title', 'examples', 'example', 'deprecated']);
const acceptsWholeType = (schema) =>
  schema && typeof schema === 'object' && typeof schema.type === 'string' && Object.keys(schema).every((k) => ANNOTATIONS.has(k));

// An `anyOf` one of whose branches accepts every value of a type that all its branches share
// accepts exactly that type: it is the same schema as that branch (issue 24: X-Test-Scenario was
// `anyOf: [string enum, string]`, now `type: string`; the tool would call that a removed branch).
function collapseWholeTypeAnyOf(node) {
  if (Array.isArray(node)) node.forEach(collapseWholeTypeAnyOf);
  else if (node && typeof node === 'object') {
    Object.values(node).forEach(collapseWholeTypeAnyOf);
    const branches = node.anyOf;
    const whole = Array.isArray(branches) ? branches.find(acceptsWholeType) : undefined;
    if (whole && branches.every((b) => b && b.type === whole.type)) {
      delete node.anyOf;
      node.type = whole.type;
    }
  }
  return node;
}

const normalized = (text) => collapseWholeTypeAnyOf(allowAddedFields(parse(text)));

/** The node at `keys` in `doc`, following local `$ref`s on the way; undefined when there is none. */
function nodeAt(doc, keys) {
  const resolve = (node) => {
    for (let seen = 0; node && typeof node.$ref === 'string' && seen < 32; seen++) {
      node = node.$ref.slice(2).split('/').reduce((n, k) => n?.[k.replaceAll('~1', '/').replaceAll('~0', '~')], doc);
    }
    return node;
  };
  return resolve(keys.reduce((node, key) => resolve(node)?.[key], doc));
}

const isFreeFormObject = (schema) =>
  schema && schema.type === 'object' && (schema.additionalProperties ?? true) === true &&
  Object.keys(schema).every((k) => ANNOTATIONS.has(k) || k === 'additionalProperties');

// Issue 33: an answer's object that was any JSON object (EventObject) is now one of the resource
// schemas, told apart by `object`. Every value the new schema allows the old one did, so a client
// loses nothing; the tool calls the oneOf's branches added and the free-form type removed. Only in
// answers: a request body narrowed that way still breaks the clients that send other objects.
function narrowedFreeFormAnswer(d, released, current) {
  const at = d.path.lastIndexOf('oneOf');
  if (at < 0 || !d.path.slice(0, at).includes('responses')) return false;
  const prefix = d.path.slice(0, at);
  const now = nodeAt(current, prefix);
  const resolvedBranches = (now?.oneOf ?? []).map((_, i) => nodeAt(current, [...prefix, 'oneOf', i]));
  return isFreeFormObject(nodeAt(released, prefix)) && resolvedBranches.length > 0 && resolvedBranches.every((b) => b?.type === 'object');
}

// A schema marked `x-extensible: true` (the event types and the event's object) says in the contract
// that values are added in minor versions and a client ignores one it does not know: a value added
// to its `enum`, or a branch to its `oneOf`, in an answer is no break. In a request it still is.
function extendedAnswer(d, current) {
  const at = d.path.length - 2;
  if (d.action !== 'add' || !['enum', 'oneOf'].includes(d.path[at]) || !d.path.slice(0, at).includes('responses')) return false;
  // The tool wraps a discriminated oneOf's branches in an `allOf` of one that the document lacks.
  const prefix = d.path.slice(0, at).filter((key, i, keys) => !(key === 'allOf' && keys[i - 2] === 'oneOf') && !(keys[i - 1] === 'allOf' && keys[i - 3] === 'oneOf'));
  return nodeAt(current, prefix)?.['x-extensible'] === true;
}

/** The breaking differences between two contracts' texts, as api-smart-diff classifies them. */
export function breakingChanges(releasedText, currentText) {
  const [released, current] = [normalized(releasedText), normalized(currentText)];
  // apiDiff rewrites the documents it is given (a schema compared with a oneOf becomes one).
  const diffs = apiDiff(globalThis.structuredClone(released), globalThis.structuredClone(current));
  // What a client sees is under `paths` (components are reached through them, already resolved).
  return diffs.filter((d) => d.type === 'breaking' && d.path[0] === 'paths' && !narrowedFreeFormAnswer(d, released, current) && !extendedAnswer(d, current));
}

/** ok unless there is a breaking difference and the major version was not raised. */
export function checkContract(currentText, releasedText) {
  const [releasedMajor] = semver(parse(releasedText).info.version);
  const [currentMajor] = semver(parse(currentText).info.version);
  const breaking = breakingChanges(releasedText, currentText);
  return { ok: breaking.length === 0 || currentMajor > releasedMajor, breaking };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [current = 'openapi.yaml', released = lastReleased()] = process.argv.slice(2);
  const { ok, breaking } = checkContract(readFileSync(current, 'utf8'), readFileSync(released, 'utf8'));
  for (const d of breaking.slice(0, 50)) console.error(`breaking: ${d.action} /${d.path.join('/')} ${d.description ?? ''}`);
  if (!ok) {
    console.error(`${current} breaks ${released} (${breaking.length} breaking differences): undo them, or raise info.version's major and add the version to CHANGELOG.md`);
    process.exit(1);
  }
  console.log(`${current} keeps ${released}'s promises${breaking.length > 0 ? ' (breaking changes, with a new major version)' : ''}`);
}
