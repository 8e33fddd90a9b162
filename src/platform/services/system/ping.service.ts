// Diagnostics for the event bus: a ping published here reaches every subscriber of the same
// organization, in every process. Operators use it to check that events cross processes.
import { AppError } from '../../../errors.js';
import type { EventMap } from '../../../events.js';
import type { ServiceContext } from '../../../context.js';

const organizationKey = (ctx: ServiceContext): string => {
  if (ctx.viewer.kind !== 'api-key') throw AppError.badRequest('Pings are scoped to an organization.');
  return ctx.viewer.organizationId;
};

/** Publishes a ping to the viewer's organization; returns what was sent. */
export async function sendPing(ctx: ServiceContext, message: string): Promise<EventMap['system.ping']> {
  const ping = { message: message.slice(0, 100_000), sentAt: new Date().toISOString() };
  await ctx.events.publish('system.ping', ping, organizationKey(ctx));
  return ping;
}

/** Pings of the viewer's organization, as they are published, until `signal` aborts. */
export function watchPings(ctx: ServiceContext, signal?: AbortSignal): AsyncIterable<EventMap['system.ping']> {
  return ctx.events.subscribe('system.ping', { key: organizationKey(ctx), signal });
}
