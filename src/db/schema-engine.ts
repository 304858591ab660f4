/**
 * @prisma/schema-engine-wasm's entry point imports its `.wasm` as an ES module, which Node 20 only
 * allows with `--experimental-wasm-modules`, so we do by hand what that entry point does.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import * as bg from '@prisma/schema-engine-wasm/schema_engine_bg';
import type { SchemaEngine } from '@prisma/schema-engine-wasm/schema_engine_bg';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { PrismaPg } from '@prisma/adapter-pg';
import {
  bindMigrationAwareSqlAdapterFactory,
  type SqlDriverAdapter,
  type SqlMigrationAwareDriverAdapterFactory,
} from '@prisma/driver-adapter-utils';
import type pg from 'pg';
import { runsOutsideTransaction, splitStatements } from './migration-script.ts';

export type { SchemaEngine };

// The project's `lib` has no WebAssembly typings (they ship with the DOM lib); this is all we use.
interface WasmApi {
  compile(bytes: Uint8Array): Promise<unknown>;
  instantiate(module: unknown, imports: Record<string, unknown>): Promise<{ exports: Record<string, unknown> }>;
}
const Wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** The compiled engine (code only, shared by every instance). */
let compiled: Promise<unknown> | undefined;
/** The live instance, registered with the glue: one at a time, made on demand. */
let ready: Promise<{ glue: typeof bg; memory: { grow(pages: number): number } }> | undefined;

/*
 * The engine arms timers through the glue's setTimeout import (the advisory-lock timeout) and never
 * clears them, which kept every process alive after migrating; we clear them once no engine is open.
 */
const pendingTimers = new Set<ReturnType<typeof setTimeout>>();
let openEngines = 0;

function trackedSetTimeout(callback: () => void, ms: number): ReturnType<typeof setTimeout> {
  const timer = setTimeout(() => {
    pendingTimers.delete(timer);
    callback();
  }, ms >>> 0);
  pendingTimers.add(timer);
  return timer;
}

function clearEngineTimers(): void {
  for (const timer of pendingTimers) clearTimeout(timer);
  pendingTimers.clear();
}

/** Instantiates the engine's WebAssembly (one instance, kept while an engine is open). */
export async function loadSchemaEngineWasm(): Promise<typeof bg> {
  ready ??= (async () => {
    compiled ??= (async () => {
      const glueUrl = import.meta.resolve('@prisma/schema-engine-wasm/schema_engine_bg');
      const wasmPath = fileURLToPath(new URL('./schema_engine_bg.wasm', glueUrl));
      return Wasm.compile(await readFile(wasmPath));
    })();
    compiled.catch(() => {
      compiled = undefined;
    });
    const imports: Record<string, unknown> = { ...bg };
    for (const name of Object.keys(imports)) {
      if (name.startsWith('__wbg_setTimeout_')) imports[name] = trackedSetTimeout;
    }
    const instance = await Wasm.instantiate(await compiled, { './schema_engine_bg.js': imports });
    bg.__wbg_set_wasm(instance.exports);
    (instance.exports.__wbindgen_start as () => void)();
    return { glue: bg, memory: instance.exports.memory as { grow(pages: number): number } };
  })();
  ready.catch(() => {
    ready = undefined;
  });
  return (await ready).glue;
}

/**
 * Lets the instance's linear memory be collected. The glue keeps typed-array views of it in module
 * variables we cannot reach; `grow(0)` detaches the buffer they view (every grow does), so they let go.
 * Most of the engine's cost is not given back to the OS anyway, hence migrate.ts's up-to-date check.
 */
function releaseInstance(): void {
  const current = ready;
  ready = undefined;
  void current?.then(
    ({ glue, memory }) => {
      memory.grow(0);
      // Unless a new instance was asked for meanwhile (it registers itself with the glue).
      if (!ready) glue.__wbg_set_wasm(undefined);
    },
    () => undefined,
  );
}

/**
 * pglite-prisma-adapter 0.7.2 does not await `executeScript`, so a failing migration would be
 * recorded as applied and its error surface later as an unhandled rejection.
 */
class AwaitingPGliteFactory implements SqlMigrationAwareDriverAdapterFactory {
  readonly provider = 'postgres' as const;
  readonly adapterName: string;
  readonly #inner: PrismaPGlite;
  readonly #shadows: PGlite[] = [];

  constructor(private readonly db: PGlite) {
    this.#inner = new PrismaPGlite(db);
    this.adapterName = this.#inner.adapterName;
  }

  async connect(): Promise<SqlDriverAdapter> {
    return this.#fix(await this.#inner.connect(), this.db);
  }

  async connectToShadowDb(): Promise<SqlDriverAdapter> {
    // The upstream shadow database is an unclosed in-memory PGlite; keep ours to close it.
    const shadow = new PGlite({ dataDir: 'memory://' });
    this.#shadows.push(shadow);
    return this.#fix(await new PrismaPGlite(shadow).connect(), shadow);
  }

  async closeShadows(): Promise<void> {
    await Promise.all(this.#shadows.splice(0).map((s) => s.close()));
  }

  #fix(adapter: SqlDriverAdapter, db: PGlite): SqlDriverAdapter {
    const withOnError = adapter as SqlDriverAdapter & { onError(e: unknown): never };
    adapter.executeScript = async (script: string) => {
      try {
        if (!runsOutsideTransaction(script)) {
          await db.exec(script);
          return;
        }
        // One session only: the file's SETs must not outlive it.
        try {
          for (const statement of splitStatements(script)) await db.exec(statement);
        } finally {
          await db.exec('RESET lock_timeout; RESET statement_timeout');
        }
      } catch (e) {
        withOnError.onError(e);
      }
    };
    return adapter;
  }
}

/**
 * @prisma/adapter-pg 7.10 splits `executeScript` on every ";" (inside strings too) and sends the
 * pieces through the pool; one simple-protocol query is one implicit transaction, so a failing
 * migration leaves nothing half-applied. A migration marked to run outside a transaction
 * (migration-script.ts) is split properly and run on one connection.
 */
class WholeScriptPgFactory implements SqlMigrationAwareDriverAdapterFactory {
  readonly provider = 'postgres' as const;
  readonly adapterName: string;
  readonly #inner: PrismaPg;

  constructor(private readonly pool: pg.Pool) {
    this.#inner = new PrismaPg(pool);
    this.adapterName = this.#inner.adapterName;
  }

  async connect(): Promise<SqlDriverAdapter> {
    const adapter = (await this.#inner.connect()) as unknown as SqlDriverAdapter & { onError(e: unknown): never };
    adapter.executeScript = async (script: string) => {
      try {
        if (!runsOutsideTransaction(script)) {
          await this.pool.query(script);
          return;
        }
        // Each statement on its own, on one session (the file's SETs hold for the next ones),
        // which is then closed rather than given back to the pool with those settings.
        const client = await this.pool.connect();
        try {
          for (const statement of splitStatements(script)) await client.query(statement);
        } finally {
          client.release(true);
        }
      } catch (e) {
        adapter.onError(e);
      }
    };
    return adapter;
  }

  connectToShadowDb(): Promise<SqlDriverAdapter> {
    return this.#inner.connectToShadowDb();
  }
}

/** Where migrations go: an open PGlite instance or a PostgreSQL connection (string or pool). */
export type MigrationTarget =
  | { kind: 'pglite'; pglite: PGlite }
  | { kind: 'postgres'; connectionString: string }
  | { kind: 'postgres'; pool: pg.Pool };

export interface EngineHandle {
  engine: SchemaEngine;
  /** Frees the engine and closes what was opened for it (never the caller's PGlite or pool). */
  close(): Promise<void>;
}

/** Opens a schema engine on `target` with the given Prisma schema files. */
export async function openSchemaEngine(
  target: MigrationTarget,
  datamodels: Array<[path: string, content: string]>,
  log: (message: string) => void = () => {},
): Promise<EngineHandle> {
  const wasm = await loadSchemaEngineWasm();
  let factory: SqlMigrationAwareDriverAdapterFactory;
  let cleanup: () => Promise<void> = async () => {};
  if (target.kind === 'pglite') {
    const f = new AwaitingPGliteFactory(target.pglite);
    factory = f;
    cleanup = () => f.closeShadows();
  } else if ('pool' in target) {
    factory = new WholeScriptPgFactory(target.pool);
  } else {
    const { default: pgModule } = await import('pg');
    const pool = new pgModule.Pool({ connectionString: target.connectionString, max: 2 });
    pool.on('error', () => {});
    factory = new WholeScriptPgFactory(pool);
    cleanup = () => pool.end();
  }
  openEngines++;
  let engine: SchemaEngine;
  try {
    engine = await wasm.SchemaEngine.new(
      { datamodels },
      (message: string) => log(message),
      bindMigrationAwareSqlAdapterFactory(factory),
    );
  } catch (e) {
    if (--openEngines === 0) {
      clearEngineTimers();
      releaseInstance();
    }
    await cleanup();
    throw e;
  }
  let closed = false;
  return {
    engine,
    close: async () => {
      if (closed) return;
      closed = true;
      try {
        engine.free();
      } finally {
        if (--openEngines === 0) {
          clearEngineTimers();
          releaseInstance();
        }
        await cleanup();
      }
    },
  };
}
