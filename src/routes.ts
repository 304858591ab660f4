import type { Router } from 'express';
import type { AppDeps } from './deps.ts';
import { registerAuthRoutes } from './auth/adapter.ts';
import { registerEventRoutes } from './events/adapter.ts';
import { registerReportRoutes } from './reports/index.ts';
import { registerRequestRoutes } from './requests/adapter.ts';
import { registerServiceRoutes } from './services/adapter.ts';
import { registerWebhookEndpointRoutes } from './webhooks/endpoint-adapter.ts';

export type RegisterRoutes = (router: Router, deps: AppDeps) => void;

/** Each resource module mounts its own operations; add one line per module. */
export const resourceModules: RegisterRoutes[] = [
  registerReportRoutes,
  registerAuthRoutes,
  registerServiceRoutes,
  registerRequestRoutes,
  registerWebhookEndpointRoutes,
  registerEventRoutes,
];
