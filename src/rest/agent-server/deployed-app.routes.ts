// The project's own HTTP app (langgraph.json `http.app`) at a deployment's url. Deployed code runs only
// in the deployment's runtime, so the API forwards it the requests none of the agent server's routes
// own, after the caller's key was checked like on every other route (another organization's key gets
// 404 before anything is forwarded), and streams the answer back: status, headers and body as the app
// sent them. The platform's own credential (`X-Api-Key`) is not passed on to deployed code. Bodies are
// bounded by the body limit: JSON ones were parsed (and checked) already and are sent re-serialized,
// others stream through and are cut at the limit with 413.
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { RequestHandler } from 'express';
import { AppError } from '../../errors.js';
import type { Deps } from '../../services/context.js';
import { forwardAppRequest } from '../../services/deployments/runtime-client.js';
import { RUNTIME_DEPLOYMENT_URL_HEADER } from '../../services/deployments/runtime-protocol.js';

// Hop-by-hop headers (RFC 9110 §7.6.1) and what the forwarding sets itself.
const NOT_FORWARDED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer', 'x-api-key', RUNTIME_DEPLOYMENT_URL_HEADER]);

/** Express middleware for the platform's `/deployments/:id` mount, after its routes and authentication. */
export function deployedAppRoutes(deps: Pick<Deps, 'config'>): RequestHandler {
  return async (req, res, next) => {
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !NOT_FORWARDED.has(name)));
    // `req.baseUrl` is this mount's path as requested: /deployments/<id>.
    headers[RUNTIME_DEPLOYMENT_URL_HEADER] = `${deps.config.publicUrl ?? `${req.protocol}://${req.get('host')}`}${req.baseUrl}`;
    let body: Buffer | Transform | undefined;
    if (req.body !== undefined) {
      body = Buffer.from(JSON.stringify(req.body));
      headers['content-length'] = String(body.length);
    } else if (req.method !== 'GET' && req.method !== 'HEAD' && (req.headers['content-length'] || req.headers['transfer-encoding'])) {
      let received = 0;
      body = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          received += chunk.length;
          if (received > deps.config.bodyLimitBytes) done(new AppError('PAYLOAD_TOO_LARGE', 'The request body is too large.'));
          else done(null, chunk);
        },
      });
      req.pipe(body);
    }
    const aborted = new AbortController();
    res.once('close', () => aborted.abort());
    if (body instanceof Transform) {
      body.once('error', () => {
        aborted.abort();
        // The rest of the body is read and dropped, so the client gets the 413 rather than a reset.
        req.unpipe();
        req.resume();
      });
    }
    const tooLarge = new Promise<never>((_resolve, reject) => body instanceof Transform && body.once('error', reject));
    tooLarge.catch(() => undefined);
    const response = await Promise.race([forwardAppRequest(req.agent, { method: req.method, path: req.url, headers, body, signal: aborted.signal }), tooLarge]).catch((error: unknown) => {
      aborted.abort();
      throw error;
    });
    if (!response) return next();
    for (const [name, value] of Object.entries(response.headers)) if (value !== undefined && !NOT_FORWARDED.has(name)) res.setHeader(name, value);
    res.status(response.statusCode ?? 502);
    res.flushHeaders();
    await pipeline(response, res).catch(() => res.destroy());
  };
}
