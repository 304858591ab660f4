// The StrykerJS test runner of `npm run mutate:events` (stryker.config.mjs; bench/README.md,
// "Mutation: every write's event"). Each Stryker worker loads test/events/every-write.ts and the
// modules it drives once, through tsx, and runs it once per mutant on a database copied from the
// migrated template, with the mutant switched on in this process (Stryker's instrumented code reads
// `globalThis.__stryker__.activeMutant` at each call). The command runner started a process per
// mutant instead, and paid the imports and the client's warm-up every time (bench/README.md). A
// mutant in module-level code (an arrow kept in a `const`) would be chosen at import, before any is
// switched on, and survive unseen: the mutated ranges hold none (src/events/writes.ts says so). Only the values of
// @stryker-mutator/api's enums are used, so the package (core's own dependency) is not imported.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { register } from 'tsx/esm/api';

const TEST_ID = 'test/events/every-write.ts';

class EveryWriteRunner {
  static inject = [];
  /** @type {() => Promise<void>} */
  #once = async () => {
    throw new Error('init() was not called');
  };

  capabilities() {
    // A module loaded through `import` cannot be loaded again; the mutants live in functions (runtime activation).
    return { reloadEnvironment: false };
  }

  async init() {
    process.env.NODE_ENV ??= 'test';
    process.env.LOG_LEVEL ??= 'silent';
    process.env.DATABASE_URL = process.env.MUTATE_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
    register();
    const load = (file) => import(pathToFileURL(path.resolve(file)).href);
    const { everyWriteOnce } = await load(TEST_ID);
    const { createTestDatabase } = await load('test/helpers/db.ts');
    this.#once = async () => {
      const db = await createTestDatabase();
      try {
        await everyWriteOnce(db);
      } finally {
        await db.drop();
      }
    };
  }

  /** The run with `mutant` active (the coverage counted as the test's): undefined when it passed, else why it failed. */
  async #run(mutant) {
    const stryker = (globalThis.__stryker__ ??= {});
    stryker.activeMutant = mutant;
    stryker.currentTestId = TEST_ID;
    try {
      await this.#once();
      return undefined;
    } catch (e) {
      return e instanceof Error ? (e.stack ?? e.message) : String(e);
    } finally {
      stryker.activeMutant = undefined;
      stryker.currentTestId = undefined;
    }
  }

  /**
   * The run without a mutant, with the coverage the instrumented code counted: each mutant is then
   * known to run only within the test (none at import), so a worker switches it on without a restart.
   */
  async dryRun() {
    const started = Date.now();
    const failure = await this.#run(undefined);
    const test = { id: TEST_ID, name: 'every write once: the feed\'s mirror equals the records', timeSpentMs: Date.now() - started };
    const mutantCoverage = globalThis.__stryker__.mutantCoverage ?? { static: {}, perTest: {} };
    // TestStatus: Success 0, Failed 1; DryRunStatus.Complete 'complete'.
    return { status: 'complete', tests: [failure === undefined ? { ...test, status: 0 } : { ...test, status: 1, failureMessage: failure }], mutantCoverage };
  }

  async mutantRun({ activeMutant }) {
    const failure = await this.#run(activeMutant.id);
    // MutantRunStatus: 'killed', 'survived'.
    return failure === undefined ? { status: 'survived', nrOfTests: 1 } : { status: 'killed', killedBy: [TEST_ID], failureMessage: failure.split('\n')[0], nrOfTests: 1 };
  }

  async dispose() {}
}

// PluginKind.TestRunner: 'TestRunner' (declareClassPlugin's shape).
export const strykerPlugins = [{ kind: 'TestRunner', name: 'every-write', injectableClass: EveryWriteRunner }];
