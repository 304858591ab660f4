/** Domain errors know no HTTP: `fromDomainError` (src/http/errors.ts) alone maps them to the contract's codes. */

export type Details = Record<string, unknown>;

export abstract class DomainError extends Error {
  /** Facts a client can act on (the conflicting status, the allowed values, …). */
  readonly details: Details | undefined;
  constructor(message: string, details?: Details) {
    super(message);
    this.name = new.target.name;
    this.details = details;
  }
}

/** The thing asked for does not exist for this broker (another broker's things do not exist either). */
export class NotFoundError extends DomainError {}

/** The thing exists but is in a state that does not allow the change; `currentStatus` says which. */
export class ConflictError extends DomainError {
  constructor(message: string, currentStatus: string, details: Details = {}) {
    super(message, { current_status: currentStatus, ...details });
  }
}

/** A value the caller gave breaks a rule the schema cannot express (a plan not in the catalogue, a tier). */
export class InvalidValueError extends DomainError {
  readonly field: string;
  readonly location: 'body' | 'query' | 'path';
  readonly rule: string;
  readonly reason: string;
  constructor(
    field: string,
    location: 'body' | 'query' | 'path',
    rule: string,
    reason: string,
    extra: Details = {},
    message = `Invalid parameter ${field}: ${reason}`,
  ) {
    super(message, { field, location, rule, reason, ...extra });
    this.field = field;
    this.location = location;
    this.rule = rule;
    this.reason = reason;
  }
}

/** A report found nothing to report on. */
export class NoDataError extends DomainError {}

/** A bound on how much a broker may do was reached; it may try again after `retryAfterSeconds`. */
export class LimitReachedError extends DomainError {
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds: number, details: Details = {}) {
    super(message, { ...details, retry_after: retryAfterSeconds });
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** Stored data breaks an invariant the code relies on: the caller cannot fix it (a 500). */
export class BrokenRecordError extends DomainError {}
