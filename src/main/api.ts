import { exitOnUncaught } from '../ops/last-resort.ts';
import { main } from './runtime.ts';

exitOnUncaught('api');

await main('api');
