import { runDatabaseProcess } from '../db/process.ts';

await runDatabaseProcess();
