import { main } from './runtime.ts';

await main('worker');
