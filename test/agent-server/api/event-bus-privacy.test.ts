// Run data stays off the event bus unless configured. Any login of the database may LISTEN on the
// event bus's channel (PostgreSQL has no privilege for it), deployed code's included, so where deployed
// code connects (`start`, the default) a run's stream events and output must not travel in
// notifications: readers get ids and read the rows. `serve` keeps them inline (one read less).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { atDeployed, collect, removeDir, type ServeProcess, startServe } from '../../support/serve.js';

const MARKER = 'confidential-7f3a9c';

let guarded: ServeProcess;
let inline: ServeProcess;
// A listener on each server's database (each agent server's own), and what each heard.
const listeners: pg.Client[] = [];
const notifications: string[] = [];
let listener: pg.Client;

beforeAll(async () => {
  // A deployed revision puts run data on its own database's bus whatever serve's setting (it takes no
  // AGENT_PLATFORM_*): the only login there is the deployment's own, which reads every row anyway. So
  // there it is the inline case, and there is no guarded one.
  [guarded, inline] = atDeployed
    ? ([undefined, await startServe()] as unknown as [ServeProcess, ServeProcess])
    : await Promise.all([startServe({ env: { AGENT_PLATFORM_RUN_DATA_ON_EVENT_BUS: 'false' } }), startServe()]);
  for (const server of [guarded, inline].filter(Boolean)) {
    const client = new pg.Client({ connectionString: server.databaseUrl });
    await client.connect();
    client.on('notification', (message) => notifications.push(message.payload ?? ''));
    await client.query('LISTEN agent_platform_events');
    listeners.push(client);
  }
  listener = listeners[0]!;
}, 120_000);
afterAll(async () => {
  for (const client of listeners) await client.end();
  for (const server of [guarded, inline]) {
    await server?.stop();
    removeDir(server?.dir);
  }
});

/** A streamed thread run and a waited stateless run whose inputs (and so outputs) carry the marker; what the client got. */
async function runWithMarker(server: ServeProcess) {
  const input = { messages: [{ role: 'user', content: `weather for ${MARKER}?` }] };
  const thread = await server.client.threads.create();
  const chunks = await collect(server.client.runs.stream(thread.thread_id, 'agent', { input, streamMode: ['values', 'updates', 'messages-tuple'] }));
  const waited = await server.client.runs.wait(null, 'agent', { input });
  return JSON.stringify({ chunks, waited });
}

/** Notifications that arrived since `from`, once the bus has been quiet for a moment. */
async function notificationsSince(from: number): Promise<string[]> {
  let seen = -1;
  while (seen !== notifications.length) {
    seen = notifications.length;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  return notifications.slice(from);
}

describe('run data on the event bus', () => {
  it.skipIf(atDeployed)('is not in any notification by default: a listener sees ids and statuses, the client still gets everything', async () => {
    const from = notifications.length;
    const received = await runWithMarker(guarded);
    expect(received).toContain(MARKER);
    const sent = await notificationsSince(from);
    expect(sent.some((payload) => payload.includes('runs.stream'))).toBe(true);
    expect(sent.filter((payload) => payload.includes(MARKER))).toEqual([]);
    // Nor spilled to event_payloads, which runtimes' logins may read.
    const { rows } = await listener.query('SELECT count(*)::int AS n FROM event_payloads WHERE payload::text LIKE $1', [`%${MARKER}%`]);
    expect(rows[0].n).toBe(0);
  });

  it("rides inline where configured (serve) and on a deployed revision's own database, saving readers a read", async () => {
    const from = notifications.length;
    expect(await runWithMarker(inline)).toContain(MARKER);
    expect((await notificationsSince(from)).some((payload) => payload.includes(MARKER))).toBe(true);
  });
});
