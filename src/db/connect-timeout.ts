/**
 * How long a server's connection to its database may take to open (README, DB_STATEMENT_TIMEOUT_MS):
 * a server that accepts connections but never completes the start-up is an error, not a hang. A
 * module of its own, so that a report's build thread takes it without loading the database client.
 */
export const CONNECT_TIMEOUT_MS = 5000;
