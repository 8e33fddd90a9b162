// One log line per answered request, with its id (X-Request-Id, echoed on every answer): errors at
// `error`, refusals (4xx) at `info`, the rest at `debug` when that is enabled. The lines keep
// pino-http's shape ({req: {id, method, url}, res: {statusCode, headers}, responseTime[, err]}),
// which this replaces: it made every request a child logger, serialising and redacting the request
// into its bindings, although at the default level a request that succeeds logs nothing (measured at
// `serve`: ~110 µs of the api thread's ~1,470 µs sampled per runs/wait). The request's logger is now
// made only when something logs under it (requestLogger).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { requestIdOf } from './request-id.js';

type LoggedRequest = IncomingMessage & { originalUrl?: string; [logged]?: { id: string; url: string | undefined; base: Logger; logger?: Logger } };

const logged = Symbol('request log');

/** The middleware: gives the request its id and logs its outcome once it is answered (or abandoned). */
export function requestLog(logger: Logger): RequestHandler {
  const logsSuccesses = logger.isLevelEnabled('debug');
  return (req: LoggedRequest, res, next) => {
    const id = requestIdOf(req);
    res.setHeader('X-Request-Id', id);
    // The url as it came: routers below strip their mount path from `req.url`.
    req[logged] = { id, url: req.originalUrl ?? req.url, base: logger };
    const startedAt = Date.now();
    // 'close' follows 'finish' on every answer, and alone ends one abandoned mid-way. An 'error'
    // listener also keeps a write after the end from being an uncaught exception.
    const logOutcome = (error?: Error) => {
      res.off('close', logOutcome);
      res.off('error', logOutcome);
      const failed = error !== undefined || res.statusCode >= 500;
      const level = failed ? 'error' : res.statusCode >= 400 ? 'info' : logsSuccesses ? 'debug' : undefined;
      if (!level) return;
      const outcome = { res: { statusCode: res.headersSent ? res.statusCode : null, headers: res.getHeaders() }, responseTime: Date.now() - startedAt };
      const log = requestLogger(req, logger);
      if (failed) log[level]({ ...outcome, err: error ?? new Error(`failed with status code ${res.statusCode}`) }, 'request errored');
      else log[level](outcome, completion(req, res));
    };
    res.on('close', logOutcome);
    res.on('error', logOutcome);
    next();
  };
}

/** The logger of a request `requestLog` saw, whose lines carry the request (its id finds them); else `fallback`. */
export function requestLogger(req: IncomingMessage, fallback: Logger): Logger {
  const request = (req as LoggedRequest)[logged];
  if (!request) return fallback;
  request.logger ??= request.base.child({ req: { id: request.id, method: req.method, url: request.url } });
  return request.logger;
}

const completion = (req: IncomingMessage, res: ServerResponse) => (!req.readableAborted && res.writableEnded ? 'request completed' : 'request aborted');
