import { main } from './runtime.ts';

await main('api');
