// Fuzz properties of the service operations (see operations.ts for what every request must satisfy).
import { fuzzOperations, SERVICE_OPERATIONS } from './operations.ts';

fuzzOperations('fuzz: service operations, live and sandbox keys', SERVICE_OPERATIONS);
