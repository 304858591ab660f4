import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { ROOT_DIR } from '../root.ts';

export const OPENAPI_PATH = path.join(ROOT_DIR, 'openapi.yaml');
/** openapi.yaml parsed by the build (scripts/build-contract.mjs), with the hash of the text it came from. */
export const BUILT_CONTRACT_PATH = path.join(ROOT_DIR, 'dist', 'openapi.json');

const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options'] as const;

/** A path or query parameter whose value the validator coerces from text. */
export interface ScalarParameter {
  name: string;
  in: 'path' | 'query';
  type: 'integer' | 'number' | 'boolean';
  /** The schema's bounds, where it has them. */
  minimum?: number;
  maximum?: number;
}

export interface OperationInfo {
  operationId: string;
  method: string;
  /** The path as written in openapi.yaml, e.g. `/api/v1/services/{service_number}`. */
  pathTemplate: string;
  /** The same path as an Express route, e.g. `/api/v1/services/:service_number`. */
  expressPath: string;
  /**
   * The scopes that admit a key, from the operation's `security` requirements. Empty means any
   * valid key is enough (an operation that lists every scope, or an empty requirement).
   */
  scopes: string[];
  matcher: RegExp;
  /** Names of the path parameters, in the order of the matcher's groups. */
  pathParameters: string[];
  /** Path and query parameters typed integer, number or boolean. */
  scalarParameters: ScalarParameter[];
  /** Names of the query parameters (a log line shows only their values). */
  queryParameters: ReadonlySet<string>;
}

export interface Contract {
  /** openapi.yaml as text (served at /openapi.yaml) and as a parsed document. */
  yaml: string;
  document: Record<string, unknown>;
  operations: OperationInfo[];
  byId: Map<string, OperationInfo>;
  /** The operation a method and path reach, or `undefined` (an unknown path or method is a 404). */
  match(method: string, urlPath: string): OperationInfo | undefined;
}

type Json = Record<string, unknown>;

function scopesOf(operation: Json, document: Json): string[] {
  const security = (operation.security ?? document.security ?? []) as Array<Record<string, string[]>>;
  const scopes = new Set<string>();
  for (const requirement of security) {
    const entries = Object.values(requirement);
    // An empty requirement (`{}`) or a scheme with no scopes admits any authenticated key.
    if (entries.length === 0 || entries.some((list) => list.length === 0)) return [];
    for (const list of entries) for (const scope of list) scopes.add(scope);
  }
  return [...scopes];
}

/** `node`, or what its `$ref` (a local `#/…` pointer, followed up to ten times) points to. */
export function resolveRef(node: unknown, document: Json): Json {
  let current = node as Json;
  for (let depth = 0; depth < 10 && typeof current?.$ref === 'string'; depth++) {
    current = (current.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>((n, key) => (n as Json | undefined)?.[key], document) as Json;
  }
  return current ?? {};
}

function scalarParametersOf(item: Json, operation: Json, document: Json): ScalarParameter[] {
  const list = [...((item.parameters ?? []) as unknown[]), ...((operation.parameters ?? []) as unknown[])];
  const result: ScalarParameter[] = [];
  for (const raw of list) {
    const parameter = resolveRef(raw, document);
    const schema = resolveRef(parameter.schema, document);
    const type = schema.type;
    if ((parameter.in === 'path' || parameter.in === 'query') && (type === 'integer' || type === 'number' || type === 'boolean')) {
      result.push({
        name: String(parameter.name),
        in: parameter.in,
        type,
        ...(typeof schema.minimum === 'number' ? { minimum: schema.minimum } : {}),
        ...(typeof schema.maximum === 'number' ? { maximum: schema.maximum } : {}),
      });
    }
  }
  return result;
}

function queryParametersOf(item: Json, operation: Json, document: Json): Set<string> {
  const list = [...((item.parameters ?? []) as unknown[]), ...((operation.parameters ?? []) as unknown[])];
  return new Set(list.map((raw) => resolveRef(raw, document)).filter((p) => p.in === 'query').map((p) => String(p.name)));
}

let cached: Contract | undefined;

/** The build's parse of this very text, if there is one: JSON parses in milliseconds, this YAML in about a second. */
export function builtDocument(yaml: string, builtFile = BUILT_CONTRACT_PATH): Json | undefined {
  try {
    const built = JSON.parse(readFileSync(builtFile, 'utf8')) as { sha256?: unknown; document?: Json };
    if (built.sha256 === createHash('sha256').update(yaml).digest('hex')) return built.document;
  } catch {
    // Not built, or unreadable: parse the YAML.
  }
  return undefined;
}

/** openapi.yaml, read and indexed once per process: the single source of routes and scopes. */
export function loadContract(file = OPENAPI_PATH): Contract {
  if (cached && file === OPENAPI_PATH) return cached;
  const yaml = readFileSync(file, 'utf8');
  const document = (file === OPENAPI_PATH ? builtDocument(yaml) : undefined) ?? (parse(yaml) as Json);
  const operations: OperationInfo[] = [];
  for (const [pathTemplate, item] of Object.entries((document.paths ?? {}) as Record<string, Json>)) {
    for (const method of HTTP_METHODS) {
      const operation = item[method] as Json | undefined;
      if (!operation) continue;
      const pattern = pathTemplate
        .split(/(\{[^}]+\})/)
        .map((part) => (part.startsWith('{') ? '([^/]+)' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('');
      operations.push({
        operationId: String(operation.operationId),
        method: method.toUpperCase(),
        pathTemplate,
        expressPath: pathTemplate.replace(/\{([^}]+)\}/g, ':$1'),
        scopes: scopesOf(operation, document),
        // Exactly the contract's path: one with a trailing slash is an unknown path (404).
        matcher: new RegExp(`^${pattern}$`),
        pathParameters: [...pathTemplate.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!),
        scalarParameters: scalarParametersOf(item, operation, document),
        queryParameters: queryParametersOf(item, operation, document),
      });
    }
  }
  const byId = new Map(operations.map((op) => [op.operationId, op]));
  const contract: Contract = {
    yaml,
    document,
    operations,
    byId,
    match(method, urlPath) {
      const upper = method.toUpperCase() === 'HEAD' ? 'GET' : method.toUpperCase();
      return operations.find((op) => op.method === upper && op.matcher.test(urlPath));
    },
  };
  if (file === OPENAPI_PATH) cached = contract;
  return contract;
}
