/** A module of its own so a report's build thread takes it without loading the database client. */
export const CONNECT_TIMEOUT_MS = 5000;
