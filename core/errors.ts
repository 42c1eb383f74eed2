import type { Output } from '@hapi/boom';
import { renderHttp, type ErrorKind } from './http/errors.ts';

/**
 * Typed errors that services throw where the rule is broken. Callers in the same process test the
 * class (`err instanceof LeaseLost`) and read its fields; the route edge answers with the status of
 * its kind (core/http/errors.ts, once for all of them). Nobody recovers meaning from a status code
 * or a message text.
 */
export class DomainError extends Error {
  /** Set by renderHttp: what hapi answers with. */
  declare readonly output: Output;
  declare readonly isBoom: true;

  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = new.target.name;
    renderHttp(this);
  }
}

/** The request is malformed in a way its schema could not say (400). */
export class BadRequest extends DomainError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('bad_request', message, details);
  }
}

/** The caller may not do this (403). */
export class Forbidden extends DomainError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('forbidden', message, details);
  }
}

/** No such thing, or one the caller may not see (404). */
export class NotFound extends DomainError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('not_found', message, details);
  }
}

/** The thing is not in a state that allows this (409). */
export class Conflict extends DomainError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('conflict', message, details);
  }
}

/** Content over a limit (413). */
export class TooLarge extends DomainError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('too_large', message, details);
  }
}

/** A well-formed request that breaks a business rule (422). */
export class Invalid extends DomainError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('invalid', message, details);
  }
}

/**
 * A per-org quota (config limits.org) would be passed: the message names the org, the count and the
 * setting. 429 for what drains as work finishes (queued jobs), 422 for what stays until deleted
 * (webhooks, environments).
 */
export class QuotaExceeded extends DomainError {
  constructor(kind: 'too_many' | 'invalid', message: string) {
    super(kind, message);
  }
}

/**
 * An external system the request needed (a deployer's engine or cluster) failed or could not be
 * reached (502): the message names it and its reason; nothing was recorded, so the call can be retried.
 */
export class UpstreamFailed extends DomainError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('upstream', message, details);
  }
}

/**
 * The lease of an attempt is gone (the attempt ended, was cancelled or reaped, or the token is
 * stale): its runner must stop writing. A conflict over HTTP; `gone` when the attempt does not exist
 * at all (404).
 */
export class LeaseLost extends DomainError {
  constructor(message: string, { gone = false }: { gone?: boolean } = {}) {
    super(gone ? 'not_found' : 'conflict', message);
  }
}

/** No scope searched holds the secret (422, naming it and the scopes in search order). */
export class SecretMissing extends DomainError {
  constructor(
    readonly secret: string,
    readonly searched: string[],
    message = `secret ${secret} not found; searched ${searched.join(', ')}`,
  ) {
    super('invalid', message);
  }
}

/**
 * For a job, only system scope holds the secret and it is not shared with jobs (422): missing as far
 * as the job goes, with a message that says why and what to do (docs/security.md, "System secrets and jobs").
 */
export class SecretNotShared extends SecretMissing {
  constructor(
    secret: string,
    searched: string[],
    /** One of svc's own integration secrets (core/secrets/platform.ts): never shared. */
    readonly integration: boolean,
  ) {
    super(
      secret,
      searched,
      `secret ${secret} exists only at system scope and is not shared with jobs; ` +
        (integration ? "it is one of svc's own integration secrets, which never reach jobs" : 'a system admin can set shared_with_jobs'),
    );
  }
}

/**
 * No worker that reported recently can run the job's harness (422): the message names the harness
 * and what it lacks there (its binary, a credential). docs/harnesses.md, "Refused at create".
 */
export class HarnessUnavailable extends Invalid {
  constructor(
    readonly harnesses: string[],
    message: string,
  ) {
    super(message);
  }
}
