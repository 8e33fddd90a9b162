// Routers that answer a few paths of a surface, in front of its busy routes (runs): an Express router
// given a request none of its routes answers sets up its dispatch and then sends the request on
// through a setImmediate, an event-loop turn more for every request that passes it.
import type { RequestHandler } from 'express';

/** `router`, entered only for the requests whose path `mayAnswer` (matched as Express does: case-insensitively, a trailing slash allowed). */
export function enteredFor(mayAnswer: RegExp, router: RequestHandler): RequestHandler {
  return (req, res, next) => (mayAnswer.test(req.path) ? router(req, res, next) : next());
}
