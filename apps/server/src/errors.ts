// Every error a client sees is a JsonableError: HTTP status, Zulip `code`, `msg` and extra fields.
// The envelope is built in one place (http/error-handler.ts).

export class JsonableError extends Error {
  readonly status: number;
  readonly code: string;
  readonly data: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(
    msg: string,
    options: { status?: number; code?: string; data?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(msg);
    this.status = options.status ?? 400;
    this.code = options.code ?? 'BAD_REQUEST';
    this.data = options.data ?? {};
    this.headers = options.headers ?? {};
  }
}

/** 404 with code BAD_REQUEST, as Zulip's ResourceNotFoundError. */
export class ResourceNotFoundError extends JsonableError {
  constructor(msg: string) {
    super(msg, { status: 404 });
  }
}

export class UnauthorizedError extends JsonableError {
  constructor(msg: string) {
    super(msg, { status: 401, code: 'UNAUTHORIZED', headers: { 'WWW-Authenticate': 'Basic realm="zulip"' } });
  }
}

export class MissingArgumentError extends JsonableError {
  constructor(name: string) {
    super(`Missing '${name}' argument`, { code: 'REQUEST_VARIABLE_MISSING', data: { var_name: name } });
  }
}

/** Role-required errors: 400 with code UNAUTHORIZED_PRINCIPAL. */
export class OrganizationOwnerRequiredError extends JsonableError {
  constructor() {
    super('Must be an organization owner', { code: 'UNAUTHORIZED_PRINCIPAL' });
  }
}

export class OrganizationAdministratorRequiredError extends JsonableError {
  constructor() {
    super('Must be an organization administrator', { code: 'UNAUTHORIZED_PRINCIPAL' });
  }
}

/** An error the client should retry after some seconds (`retry-after` in the body and the header). */
class RetryLaterError extends JsonableError {
  constructor(msg: string, status: number, code: string, retryAfterSeconds: number) {
    super(msg, { status, code, data: { 'retry-after': retryAfterSeconds }, headers: { 'Retry-After': String(Math.ceil(retryAfterSeconds)) } });
  }
}

export class RateLimitedError extends RetryLaterError {
  constructor(retryAfterSeconds: number) {
    super('API usage exceeded rate limit', 429, 'RATE_LIMIT_HIT', retryAfterSeconds);
  }
}

/** 503: the server cannot take the request now (connections or transactions not available in time). */
export class ServerOverloadedError extends RetryLaterError {
  constructor(retryAfterSeconds: number) {
    super('The server is busy; retry later', 503, 'SERVER_OVERLOADED', retryAfterSeconds);
  }
}

export const insufficientPermission = () => new JsonableError('Insufficient permission');

/** One address that could not be invited: [address, reason, the account exists but is deactivated]. */
export type InvitationFailure = [string, string, boolean];

/** Zulip's InvitationError: 400 INVITATION_FAILED with the per-address failures. */
export class InvitationError extends JsonableError {
  constructor(msg: string, errors: InvitationFailure[], options: { sentInvitations: boolean; dailyLimitReached?: boolean }) {
    super(msg, {
      code: 'INVITATION_FAILED',
      data: { errors, sent_invitations: options.sentInvitations, license_limit_reached: false, daily_limit_reached: options.dailyLimitReached ?? false },
    });
  }
}
