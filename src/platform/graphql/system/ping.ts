import { builder } from '../builder.js';
import type { EventMap } from '../../../events.js';
import { sendPing, watchPings } from '../../services/system/ping.service.js';

const PingRef = builder.objectRef<EventMap['system.ping']>('Ping').implement({
  description: 'A diagnostic event delivered to every subscriber of the organization, in every process.',
  fields: (t) => ({
    message: t.exposeString('message', { description: 'Text sent with the ping.' }),
    sentAt: t.string({ description: 'When it was sent (ISO 8601).', resolve: (ping) => ping.sentAt }),
  }),
});

builder.mutationField('ping', (t) =>
  t.field({
    type: PingRef,
    description: 'Publishes a ping to the organization’s `pings` subscribers.',
    args: { message: t.arg.string({ required: true, description: 'Text to send.' }) },
    resolve: (_root, args, ctx) => sendPing(ctx, args.message),
  }),
);

builder.subscriptionField('pings', (t) =>
  t.field({
    type: PingRef,
    description: 'Pings published to the viewer’s organization, from any process.',
    subscribe: (_root, _args, ctx) => watchPings(ctx),
    resolve: (ping) => ping,
  }),
);
