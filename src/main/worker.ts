import { exitOnUncaught } from '../ops/last-resort.ts';
import { main } from './runtime.ts';

exitOnUncaught('worker');

await main('worker');
