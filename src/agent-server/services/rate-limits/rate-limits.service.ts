// The agent server's opt-in rate limits (AGENT_SERVER_RATE_LIMIT): a token bucket per caller, one for
// the whole deployment and one per caller for searches, kept in the deployment's own database so that
// every process serving it draws from the same buckets. Off by default; `shadow` only counts and logs
// what `enforce` would refuse, so an operator can see a limit's effect before it refuses anyone.
import { AppError } from '../../../errors.js';
import type { AuthorizedContext } from '../custom-auth/custom-auth.js';
import { type BucketDraw, countDecisions, drawTokens } from './rate-limits.store.js';

/** Paths that read the most for one request: searches and counts, limited per caller besides the caller's limit. */
const SEARCH_PATH = /\/(search|count)$/;

/** Who a request's caller is, for their bucket: custom auth's identity, else the platform user the gateway let through, else `serve`'s developer. */
const callerOf = (ctx: AuthorizedContext): string => ctx.auth?.user.identity ?? 'local-developer';

/**
 * Draws a request of `ctx`'s caller (to `path`) from the buckets it counts against. Off: nothing. In
 * `enforce` mode, throws TOO_MANY_REQUESTS with `retryAfterSeconds` when a bucket is empty; in `shadow`
 * mode, logs that it would have and lets the request through. Either way the buckets count it.
 */
export async function applyRateLimits(ctx: AuthorizedContext, path: string): Promise<void> {
  const { mode, callerPerMinute, deploymentPerMinute, searchPerMinute } = ctx.config.agentServerRateLimits;
  if (mode === 'off') return;
  const caller = callerOf(ctx);
  const bucket = (kind: BucketDraw['kind'], key: string, perMinute: number): BucketDraw => ({ key: `${kind}:${key}`, kind, capacity: perMinute, perSecond: perMinute / 60 });
  const draws = [bucket('caller', caller, callerPerMinute), bucket('deployment', ctx.deployment.deploymentId, deploymentPerMinute)];
  if (SEARCH_PATH.test(path)) draws.push(bucket('search', caller, searchPerMinute));
  const refused = (await drawTokens(ctx.db, draws)).filter((decision) => !decision.allowed);
  if (!refused.length) return;
  const retryAfterSeconds = Math.max(...refused.map((decision) => decision.retryAfterSeconds));
  const buckets = refused.map((decision) => decision.kind);
  if (mode === 'shadow') {
    ctx.logger.info({ caller, buckets, retryAfterSeconds, path }, 'rate limit (shadow mode): this request would have been refused');
    return;
  }
  throw new AppError('TOO_MANY_REQUESTS', `Rate limit exceeded (${buckets.join(', ')}): retry in ${retryAfterSeconds} s.`, { retryAfterSeconds });
}

/** The rate limits' mode and every decision counted (all processes), for /metrics. */
export async function rateLimitFigures(ctx: AuthorizedContext) {
  const { mode } = ctx.config.agentServerRateLimits;
  return { mode, decisions: mode === 'off' ? [] : await countDecisions(ctx.db) };
}
