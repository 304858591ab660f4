// Lint: ESLint's and typescript-eslint's recommended rules over our own sources, and the import
// direction of src/ (docs/architecture.md, "Where things live"), enforced with eslint-plugin-import-x.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { importX } from 'eslint-plugin-import-x';

/** Everything in src/ but the given folders and top-level files (paths relative to src/). */
const allBut = (...allowed) => ({ from: './src', except: allowed.map((p) => `./${p}`) });

/** Files that hold data access or domain rules: they never know HTTP. */
const DOMAIN = [
  './src/*/store.ts',
  './src/*/use-cases.ts',
  './src/*/sandbox.ts',
  './src/*/plans.ts',
  './src/*/change-requests.ts',
  './src/*/present.ts',
  './src/*/read-cache.ts',
  './src/reports/types.ts',
  './src/reports/{kinds,runs}/*.ts',
  './src/reports/workbook/{writer,store,pages,invoice-table,service-table}.ts',
  './src/reports/delivery/{pipeline,reconcile,links}.ts',
  './src/events/reads.ts',
  './src/webhooks/{endpoint-store,endpoint-use-cases}.ts',
];

/**
 * Who may import whom. Lower layers never import higher ones: shared ← db, jobs, http ← events ←
 * the resources (services ← requests; reports; webhooks), which write their events in the transactions of
 * their changes ← the composition (app, routes, work, deps) ← main and cli. No two folders import
 * each other.
 */
export const importDirection = [
  { target: './src/shared', ...allBut('shared'), message: 'src/shared is used by everything and uses nothing of src/.' },
  { target: './src/db', ...allBut('db', 'shared', 'config.ts', 'logger.ts', 'root.ts'), message: 'src/db knows no HTTP, resource or job.' },
  { target: './src/jobs', ...allBut('jobs', 'shared', 'config.ts', 'logger.ts', 'redis.ts'), message: 'src/jobs is a generic queue adapter: it is handed processors and imports no resource.' },
  { target: './src/http', ...allBut('http', 'shared', 'ops', 'root.ts', 'logger.ts', 'config.ts'), message: 'HTTP plumbing knows no resource.' },
  { target: './src/idempotency', ...allBut('idempotency', 'shared'), message: 'src/idempotency keeps the keys: it knows no HTTP and no resource.' },
  { target: './src/ops', ...allBut('ops', 'jobs', 'shared', 'deps.ts', 'config.ts', 'logger.ts'), message: 'src/ops imports no resource.' },
  { target: './src/auth', ...allBut('auth', 'http', 'shared', 'db', 'ops', 'config.ts', 'logger.ts', 'redis.ts', 'deps.ts', 'routes.ts'), message: 'src/auth imports no other resource.' },
  { target: './src/events', ...allBut('events', 'http', 'shared', 'db', 'config.ts', 'logger.ts', 'deps.ts', 'routes.ts'), message: 'src/events records and serves events: it imports no resource (the resources write theirs through it).' },
  { target: './src/services', ...allBut('services', 'events', 'http', 'shared', 'db', 'config.ts', 'logger.ts', 'deps.ts', 'routes.ts'), message: 'src/services imports no other resource (src/requests imports it, not the other way).' },
  { target: './src/requests', ...allBut('requests', 'services', 'events', 'http', 'shared', 'db', 'config.ts', 'logger.ts', 'deps.ts', 'routes.ts'), message: 'src/requests imports only src/services of the resources.' },
  { target: './src/reports', ...allBut('reports', 'events', 'jobs', 'http', 'shared', 'db', 'config.ts', 'logger.ts'), message: 'src/reports imports no other resource, and declares the parts it takes rather than importing the composition.' },
  { target: './src/cli', ...allBut('cli', 'auth', 'services', 'reports', 'events', 'db', 'shared', 'config.ts', 'logger.ts', 'root.ts'), message: 'The CLI uses the stores and shared helpers (and writes the events of the changes it makes), never HTTP.' },
  { target: './src/webhooks', ...allBut('webhooks', 'events', 'jobs', 'http', 'shared', 'db', 'config.ts', 'logger.ts', 'deps.ts', 'routes.ts'), message: 'src/webhooks (webhook endpoints and their delivery) imports src/events, never another resource, and src/jobs only as the generic queues.' },
  { target: DOMAIN, from: './src/http', message: 'Data access and domain rules never import HTTP: throw a domain error (src/shared/errors.ts).' },
];

/**
 * One door per module: outside its folder, src/ imports src/reports only through its index.ts, so
 * the module's inside (runs/, kinds/, workbook/, delivery/) can change without its users noticing.
 */
export const moduleDoors = [
  { target: ['./src/*.ts', './src/!(reports)/**/*.ts'], from: './src/reports', except: ['./index.ts'], message: 'Import src/reports through its door, src/reports/index.ts.' },
];

export default tseslint.config(
  { ignores: ['node_modules/', 'generated/', 'docs/', 'var/', 'coverage/', 'dist/', 'clients/*/dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', fetch: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' } },
    rules: {
      // `_`-prefixed parameters are kept for a signature (Express error handlers need four).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    rules: {
      'import-x/no-restricted-paths': ['error', { zones: [...importDirection, ...moduleDoors] }],
      // One step of work per function: a longer one is split into named steps.
      'max-lines-per-function': ['error', { max: 80 }],
    },
  },
);
