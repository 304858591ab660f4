import type { AppDeps } from './deps.ts';
import type { RegisterRoutes } from './http/resource.ts';
import { registerAuthRoutes } from './auth/adapter.ts';
import { registerConsoleRoutes } from './console/index.ts';
import { registerEventRoutes } from './events/adapter.ts';
import { registerReportRoutes } from './reports/index.ts';
import { registerRequestLogRoutes } from './request-logs/adapter.ts';
import { registerRequestRoutes } from './requests/adapter.ts';
import { registerServiceRoutes } from './services/adapter.ts';
import { registerWebhookEndpointRoutes } from './webhooks/endpoint-adapter.ts';

/** Each resource module mounts its own operations; add one line per module. */
export const resourceModules: Array<RegisterRoutes<AppDeps>> = [
  registerReportRoutes,
  registerAuthRoutes,
  registerServiceRoutes,
  registerRequestRoutes,
  registerWebhookEndpointRoutes,
  registerEventRoutes,
  registerRequestLogRoutes,
  registerConsoleRoutes,
];
