// The one JSON body parser of the REST surfaces and /graphql: express.json within the body limit,
// plus the nesting limit and the strings PostgreSQL refuses (src/limits/json.ts), so every surface
// answers them the same way, each in its own error dialect.
import { AsyncResource } from 'node:async_hooks';
import type { IncomingMessage } from 'node:http';
import express, { type NextFunction, type Request, type RequestHandler } from 'express';
import type { Config } from '../config.js';
import { assertJsonDepth, assertStorableText, mayHoldUnstorableBytes } from '../limits/json.js';

const needsTextCheck = new WeakSet<Request>();

/**
 * Whether a body of this Content-Type is read as JSON: JSON's own type; with `lenient` also a body
 * labelled text/plain, as the reference agent server reads it (a proxy that forwards the body as a
 * string sends JSON so: fetch labels it `text/plain;charset=UTF-8`), or not labelled at all (curl
 * with -d and no header), which the reference would run as an empty body.
 */
export function readsAsJson(contentType: string | undefined, lenient: boolean): boolean {
  const type = (contentType ?? '').split(';', 1)[0]!.trim().toLowerCase();
  return type === 'application/json' || (lenient && (type === '' || type === 'text/plain'));
}

/**
 * Parses JSON bodies (`strict: false` also accepts top-level scalars, as the agent server does;
 * `lenient`: also those labelled text/plain or not labelled, see readsAsJson).
 */
export function jsonBody(config: Pick<Config, 'bodyLimit' | 'bodyLimitBytes' | 'jsonMaxDepth'>, options: { strict?: boolean; lenient?: boolean } = {}): RequestHandler[] {
  const lenient = options.lenient ?? false;
  const strict = options.strict ?? true;
  const verify = (req: IncomingMessage, body: Buffer) => {
    assertJsonDepth(body, config.jsonMaxDepth);
    if (mayHoldUnstorableBytes(body)) needsTextCheck.add(req as Request);
  };
  const parser = express.json({
    limit: config.bodyLimit,
    strict,
    type: (req) => readsAsJson(req.headers['content-type'], lenient),
    verify: (req, _res, body) => verify(req, body),
  });
  return [
    (req, res, next) => {
      if (!isPlainJsonBody(req, config.bodyLimitBytes, lenient)) return parser(req, res, next);
      readPlainJsonBody(req, (body) => verify(req, body), strict, next);
    },
    (req, _res, next) => {
      if (needsTextCheck.has(req)) assertStorableText(req.body);
      next();
    },
  ];
}

/**
 * Whether a request's body is the common case, read here rather than by express.json: JSON of a
 * stated length within the limit, neither compressed nor in a charset named, and not yet read. Per
 * request, express.json (body-parser, raw-body, iconv-lite's decoding) was ~6% of the api thread's
 * CPU per runs/wait at `serve`; anything else (compressed, chunked, too large, another charset, a
 * type it would not parse) it still reads, with its errors.
 */
function isPlainJsonBody(req: IncomingMessage, limitBytes: number, lenient: boolean): boolean {
  const { headers } = req;
  const length = headers['content-length'];
  const type = headers['content-type'];
  return (
    headers['content-encoding'] === undefined &&
    headers['transfer-encoding'] === undefined &&
    length !== undefined &&
    /^\d{1,15}$/.test(length) &&
    Number(length) <= limitBytes &&
    // Parameters (a charset) are express.json's to judge.
    !type?.includes(';') &&
    readsAsJson(type, lenient) &&
    req.readableFlowing === null &&
    !req.readableEnded &&
    !req.destroyed
  );
}

/** Reads and parses a body isPlainJsonBody accepted into `req.body`, as express.json would (its errors' status and type too). */
function readPlainJsonBody(req: Request, verify: (body: Buffer) => void, strict: boolean, next: NextFunction) {
  // The request's async context (AsyncLocalStorage) continues after the body, not the socket's.
  const done = AsyncResource.bind((error?: unknown) => next(error));
  const chunks: Buffer[] = [];
  const detach = () => {
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('aborted', onAborted);
    req.off('error', onError);
  };
  const onError = (error: unknown) => {
    detach();
    done(Object.assign(error as Error, { status: 400, statusCode: 400, expose: true }));
  };
  const onData = (chunk: Buffer) => chunks.push(chunk);
  const onAborted = () => onError(Object.assign(new Error('request aborted'), { code: 'ECONNABORTED', type: 'request.aborted' }));
  const onEnd = () => {
    detach();
    const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    try {
      verify(body);
    } catch (error) {
      const failed = error as Error & { type?: string };
      return done(Object.assign(failed, { status: 403, statusCode: 403, expose: true, body, type: failed.type ?? 'entity.verify.failed' }));
    }
    // As iconv-lite decodes UTF-8 for express.json: a byte order mark is no part of the text.
    let text = body.toString('utf8');
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    try {
      req.body = parseJson(text, strict);
    } catch (error) {
      return done(Object.assign(error as Error, { status: 400, statusCode: 400, expose: true, body: text, type: 'entity.parse.failed' }));
    }
    done();
  };
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('aborted', onAborted);
  req.on('error', onError);
}

/** JSON.parse as express.json applies it: an empty body is `{}`; `strict`, only an object or an array. */
function parseJson(text: string, strict: boolean): unknown {
  if (text.length === 0) return {};
  if (strict) {
    const first = /\S/.exec(text)?.[0];
    if (first !== '{' && first !== '[') throw new SyntaxError(`Unexpected token ${first} in JSON at position ${text.indexOf(first ?? '')}`);
  }
  return JSON.parse(text);
}

/**
 * Sets `req.body` from JSON bytes already read off the request (by a project's `http.app` middleware,
 * which may also have changed them), within the parser's limits; errors as the parser's.
 */
export function setJsonBody(req: Request, bytes: Buffer, config: Pick<Config, 'bodyLimitBytes' | 'jsonMaxDepth'>): void {
  if (bytes.length > config.bodyLimitBytes) throw Object.assign(new Error('request entity too large'), { status: 413, type: 'entity.too.large' });
  assertJsonDepth(bytes, config.jsonMaxDepth);
  let body: unknown;
  try {
    body = bytes.length ? JSON.parse(bytes.toString('utf8')) : undefined;
  } catch {
    throw Object.assign(new Error('invalid JSON'), { status: 400, type: 'entity.parse.failed' });
  }
  if (mayHoldUnstorableBytes(bytes)) assertStorableText(body);
  req.body = body;
}
