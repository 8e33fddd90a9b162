// One error type for expected failures. Services throw AppError; each surface's error handler maps the
// code to its own dialect. Anything else is an unexpected failure and is masked at the edge.
import type { ZodError } from 'zod';

export type ErrorCode =
  | 'VALIDATION_FAILED'
  | 'BAD_REQUEST'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNPROCESSABLE'
  /** A dependency (a deployment's runtime) is not running or not answering: try again later. */
  | 'UNAVAILABLE'
  /** A rate limit refuses the request for now; `details.retryAfterSeconds` says for how long. */
  | 'TOO_MANY_REQUESTS';

/** A validation problem at a location: `loc` is the path into the input (FastAPI's shape). */
export type ValidationIssue = { loc: (string | number)[]; msg: string; type: string };

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ValidationIssue[] | Record<string, unknown>,
  ) {
    super(message);
    this.name = 'AppError';
  }

  static notFound(message: string) {
    return new AppError('NOT_FOUND', message);
  }
  static forbidden(message = 'You do not have permission to perform this action.') {
    return new AppError('FORBIDDEN', message);
  }
  static unauthenticated(message = 'Invalid or missing API key.') {
    return new AppError('UNAUTHENTICATED', message);
  }
  static conflict(message: string) {
    return new AppError('CONFLICT', message);
  }
  static badRequest(message: string) {
    return new AppError('BAD_REQUEST', message);
  }

  /** Turns zod issues into VALIDATION_FAILED with FastAPI-style details; `root` prefixes each loc (e.g. "body"). */
  static fromZod(error: ZodError, root?: string) {
    const issues: ValidationIssue[] = error.issues.map((issue) => ({
      loc: [...(root ? [root] : []), ...issue.path.map((part) => (typeof part === 'symbol' ? String(part) : part))],
      msg: issue.message,
      type: issue.code,
    }));
    const summary = issues.map((issue) => `${issue.loc.join('.') || 'input'}: ${issue.msg}`).join('; ');
    return new AppError('VALIDATION_FAILED', summary, issues);
  }
}

export const isAppError = (error: unknown): error is AppError => error instanceof AppError;

/**
 * Prisma's unique constraint violation (P2002): a concurrent request stored the same name or key
 * first, after this one checked it was free. Services answer it as the CONFLICT their check gives.
 */
export const isUniqueViolation = (error: unknown): boolean => (error as { code?: unknown } | null)?.code === 'P2002';

/**
 * A database error that is the request's outcome rather than a failure of ours, as an AppError:
 * a row the request changes was deleted by another after it was read (Prisma P2025: NOT_FOUND),
 * Prisma's transaction API gave up waiting for a connection or for the transaction (P2028: the server
 * is busy), or the database is away (UNAVAILABLE: a 503 clients retry, as /ok says meanwhile).
 */
export function appErrorFromDatabase(error: unknown): AppError | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'P2025') return AppError.notFound('Not found: it was deleted meanwhile.');
  if (code === 'P2028') return new AppError('UNAVAILABLE', 'The server is busy; try again.');
  if (isDatabaseUnreachable(error)) return new AppError('UNAVAILABLE', 'The database is not reachable; try again.');
  return undefined;
}

// Connections refused, reset or timed out (node), the server shutting down or starting up
// (SQLSTATE 57P01-57P03) or another connection exception (class 08), Prisma's "can't reach" (P1001,
// P1002) and "server closed the connection" (P1017).
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', '57P01', '57P02', '57P03', 'P1001', 'P1002', 'P1017']);
// pg's own words for a connection that broke under a client, which carry no code.
const UNREACHABLE_MESSAGE = /^(Connection terminated( unexpectedly)?|Client has encountered a connection error and is not queryable)$/;

/** Whether an error (or one of its causes: Prisma's adapter wraps pg's) says the database cannot be reached. */
export function isDatabaseUnreachable(error: unknown): boolean {
  for (let cause = error, depth = 0; cause && typeof cause === 'object' && depth < 5; cause = (cause as { cause?: unknown }).cause, depth++) {
    const { code, message, syscall } = cause as { code?: unknown; message?: unknown; syscall?: unknown };
    if (typeof code === 'string' && (UNREACHABLE_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) return true;
    // A server reached through its Unix socket, stopped: the socket's file is gone.
    if (code === 'ENOENT' && syscall === 'connect') return true;
    if (typeof message === 'string' && UNREACHABLE_MESSAGE.test(message)) return true;
  }
  return false;
}
