/** The console (openapi.yaml, "Console"): its links, sessions and pages. */
export { registerConsoleRoutes, consoleLinkUrl, consoleShellSession } from './adapter.ts';
export { CONSOLE_CSP } from './pages.ts';
export { createConsoleLink, deleteEndedConsoleSessions } from './sessions.ts';
export { CONSOLE_SHELL_PATHS, consoleShell, registerConsoleAssets } from './static.ts';
