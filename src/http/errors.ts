// Error dialects. Each REST surface answers in the shape its official clients expect; every one of
// them maps the same AppError codes, and none ever shows a stack trace, SQL or secret.
//   fastapi   control plane, usage, bulk export, tenancy: {"detail": "..."}, 422 {"detail": [{loc,msg,type}]}
//   ingest    trace ingestion (langsmith SDK): {"error": "...", "details": "..."}
//   plain     agent server (langgraph SDK): a plain-text message, read as "HTTP 404: <message>"
import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { AppError, appErrorFromDatabase, type ErrorCode, isAppError } from '../errors.js';
import { unstorableTextFromDatabase } from '../limits/json.js';
import { requestLogger } from './request-log.js';

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
  TOO_MANY_REQUESTS: 429,
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
  return appErrorFromDatabase(error) ?? unstorableTextFromDatabase(error);
}

/** The status and message an error answers with in any dialect (unexpected ones are logged, and a bare 500). */
export function httpStatus(error: unknown, logger: Logger): { status: number; message: string; details?: AppError['details'] } {
  const appError = isAppError(error) ? error : fromHttpError(error);
  if (!appError) {
    logger.error({ err: error }, 'unexpected error');
    return { status: 500, message: 'Internal server error.' };
  }
  return { status: STATUS[appError.code], message: appError.message, details: appError.details };
}

export function errorHandler(dialect: ErrorDialect, logger: Logger): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (res.headersSent) return next(error);
    // The request's logger carries its id, so the log line can be found from a report.
    const { status, message, details } = httpStatus(error, requestLogger(req, logger));
    send(res, dialect, status, message, details);
  };
}

function send(res: Parameters<ErrorRequestHandler>[2], dialect: ErrorDialect, status: number, message: string, details: AppError['details']) {
  if (status === 413) return afterRefusedBody(res, () => answer(res, dialect, status, message, details));
  answer(res, dialect, status, message, details);
}

function answer(res: Parameters<ErrorRequestHandler>[2], dialect: ErrorDialect, status: number, message: string, details: AppError['details']) {
  res.status(status);
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

// How much of a refused body is read and dropped before the 413 is sent, and for how long.
const REFUSED_BODY_DRAIN_BYTES = 64 * 1024 * 1024;
const REFUSED_BODY_DRAIN_MS = 5_000;

/**
 * Answers a refused (too large) body once the client has finished sending it, then closes the
 * connection. Answering mid-upload and closing made the client's next write hit a reset: fetch
 * (undici, the official SDKs) then reports "fetch failed" / ECONNRESET, never the 413. The rest of the
 * body is read and dropped, bounded like nginx's lingering close: a body declared or sent beyond
 * REFUSED_BODY_DRAIN_BYTES, or still arriving after REFUSED_BODY_DRAIN_MS, is answered (and the
 * connection closed) at once. The connection always closes, so the client's next request opens a fresh
 * one instead of being read as the rest of this body.
 */
export function afterRefusedBody(res: Parameters<ErrorRequestHandler>[2], send: () => void): void {
  res.set('Connection', 'close');
  const req = res.req;
  const declared = Number(req.headers['content-length'] ?? 0);
  if (req.readableEnded || req.destroyed || declared > REFUSED_BODY_DRAIN_BYTES) return send();
  let drained = 0;
  let sent = false;
  const finish = () => {
    if (sent) return;
    sent = true;
    clearTimeout(timer);
    req.off('data', onData).off('end', finish).off('error', finish).off('close', finish);
    if (!res.writableEnded && !res.destroyed) send();
  };
  const onData = (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > REFUSED_BODY_DRAIN_BYTES) finish();
  };
  const timer = setTimeout(finish, REFUSED_BODY_DRAIN_MS);
  // A body parser that gave up unpiped and paused the request; reading resumes it.
  req.unpipe();
  req.on('data', onData).once('end', finish).once('error', finish).once('close', finish);
  req.resume();
}

/** Body errors on /graphql (malformed JSON, too deep, too large) answer in GraphQL's own shape. */
export const graphqlBodyErrorHandler: ErrorRequestHandler = (error, _req, res, next) => {
  const appError = isAppError(error) ? error : fromHttpError(error);
  if (!appError || res.headersSent) return next(error);
  const sendErrors = () =>
    res.status(STATUS[appError.code] === 422 ? 400 : STATUS[appError.code]).json({
      errors: [{ message: appError.message, extensions: { code: appError.code } }],
    });
  if (appError.code === 'PAYLOAD_TOO_LARGE') return afterRefusedBody(res, sendErrors);
  sendErrors();
};
