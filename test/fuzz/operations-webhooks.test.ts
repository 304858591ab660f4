// Fuzz properties of the webhook endpoint and event operations (see operations.ts for what every
// request must satisfy). Their records exist in both modes, so a request that would change any is
// always broken, with either key; reads of the key's own endpoints and events must succeed.
import { fuzzOperations, WEBHOOK_OPERATIONS } from './operations.ts';

fuzzOperations('fuzz: webhook endpoint and event operations, live and sandbox keys', WEBHOOK_OPERATIONS);
