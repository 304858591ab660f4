import type { Router } from 'express';

/**
 * How a resource module mounts its operations on the API's router. Each module names the narrow
 * dependencies it takes (`Deps`), so it imports nothing of the composition that hands them over
 * (src/routes.ts gives every module the app's AppDeps, which must hold what each one names).
 */
export type RegisterRoutes<Deps> = (router: Router, deps: Deps) => void;
