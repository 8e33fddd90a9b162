// Error dialects. Each REST surface answers in the shape its official clients expect; every one of
// them maps the same AppError codes, and none ever shows a stack trace, SQL or secret.
//   fastapi   control plane, usage, bulk export, tenancy: {"detail": "..."}, 422 {"detail": [{loc,msg,type}]}
//   ingest    trace ingestion (langsmith SDK): {"error": "...", "details": "..."}
//   plain     agent server (langgraph SDK): a plain-text message, read as "HTTP 404: <message>"
import type { ErrorRequestHandler, RequestHandler } from 'express';
import type {} from 'pino-http';
import type { Logger } from 'pino';
import { AppError, type ErrorCode, isAppError } from '../../errors.js';
import { unstorableTextFromDatabase } from '../../limits/json.js';

export type ErrorDialect = 'fastapi' | 'ingest' | 'plain';

const STATUS: Record<ErrorCode, number> = {
  VALIDATION_FAILED: 422,
  BAD_REQUEST: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNPROCESSABLE: 422,
  UNAVAILABLE: 503,
};

/** body-parser and other http-errors carry `status`/`type`; turn the client-side ones into AppErrors. */
function fromHttpError(error: unknown): AppError | undefined {
  const { status, type } = (error ?? {}) as { status?: number; type?: string };
  if (type === 'entity.parse.failed') {
    return new AppError('VALIDATION_FAILED', 'Request body is not valid JSON.', [
      { loc: ['body'], msg: 'JSON decode error', type: 'json_invalid' },
    ]);
  }
  if (type === 'entity.too.large' || status === 413) return new AppError('PAYLOAD_TOO_LARGE', 'Request body is too large.');
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') return AppError.badRequest('Unsupported content encoding.');
  if (typeof status === 'number' && status >= 400 && status < 500) return new AppError('BAD_REQUEST', 'Bad request.');
  // Prisma's transaction API gave up waiting for a connection or for the transaction: the server is busy.
  if ((error as { code?: string } | undefined)?.code === 'P2028') return new AppError('UNAVAILABLE', 'The server is busy; try again.');
  return unstorableTextFromDatabase(error);
}

export function errorHandler(dialect: ErrorDialect, logger: Logger): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (res.headersSent) return next(error);
    const appError = isAppError(error) ? error : fromHttpError(error);
    if (!appError) {
      // `req.log` (pino-http) carries the request id, so the log line can be found from a report.
      (req.log ?? logger).error({ err: error }, 'unexpected error');
      return send(res, dialect, 500, 'Internal server error.', undefined);
    }
    send(res, dialect, STATUS[appError.code], appError.message, appError.details);
  };
}

function send(res: Parameters<ErrorRequestHandler>[2], dialect: ErrorDialect, status: number, message: string, details: AppError['details']) {
  res.status(status);
  if (status === 413) closeAfterResponse(res);
  switch (dialect) {
    case 'fastapi':
      res.json({ detail: status === 422 && Array.isArray(details) ? details : message });
      return;
    case 'ingest':
      res.json({ error: message, details: Array.isArray(details) ? details.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; ') : message });
      return;
    case 'plain':
      res.type('text/plain').send(message);
      return;
  }
}

/** Unknown paths under a surface's prefix answer 404 in that surface's dialect. */
export const notFoundHandler: RequestHandler = (req) => {
  throw AppError.notFound(`Not found: ${req.method} ${req.originalUrl.split('?')[0]}`);
};

/**
 * A refused body may still be arriving: rather than read (and discard) up to its declared length, the
 * connection closes after the answer, so the client's next request opens a fresh one instead of
 * being read as the rest of this body.
 */
function closeAfterResponse(res: Parameters<ErrorRequestHandler>[2]) {
  res.set('Connection', 'close');
}

/** Body errors on /graphql (malformed JSON, too deep, too large) answer in GraphQL's own shape. */
export const graphqlBodyErrorHandler: ErrorRequestHandler = (error, _req, res, next) => {
  const appError = isAppError(error) ? error : fromHttpError(error);
  if (!appError || res.headersSent) return next(error);
  if (appError.code === 'PAYLOAD_TOO_LARGE') closeAfterResponse(res);
  res.status(STATUS[appError.code] === 422 ? 400 : STATUS[appError.code]).json({
    errors: [{ message: appError.message, extensions: { code: appError.code } }],
  });
};
