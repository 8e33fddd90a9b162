// The event bus crosses processes: a ping published through one platform process reaches a
// graphql-ws subscriber connected to another, and an SSE subscriber too.
import { randomBytes, randomUUID } from 'node:crypto';
import { createClient, type Client } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { buildTenant } from '../support/factories.js';
import { databaseUrl, graphql, startTestPlatform, type TestPlatform } from '../support/helpers.js';
import { type PlatformProcess, spawnPlatform } from '../support/processes.js';

let platform: TestPlatform;
let other: PlatformProcess;
let tenant: Awaited<ReturnType<typeof buildTenant>>;
let outsider: Awaited<ReturnType<typeof buildTenant>>;

beforeAll(async () => {
  platform = await startTestPlatform();
  tenant = await buildTenant(platform.system);
  outsider = await buildTenant(platform.system);
  // A second process: only the API role, on the same database.
  other = await spawnPlatform(['start', '--role', 'api', '--port', '0'], {
    DATABASE_URL: databaseUrl(),
    AGENT_PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'),
  });
}, 90_000);
afterAll(async () => {
  await other?.stop();
  await platform?.stop();
});

function subscribe(client: Client, query: string): { next: Promise<any>; received: any[] } {
  const received: any[] = [];
  let resolve!: (value: any) => void;
  let reject!: (error: unknown) => void;
  const next = new Promise((res, rej) => ((resolve = res), (reject = rej)));
  client.subscribe({ query }, {
    next: (value) => {
      received.push(value);
      resolve(value);
    },
    error: reject,
    complete: () => undefined,
  });
  return { next, received };
}

/** The server attaches the listener when it processes the subscribe message, which the client cannot
 * observe; so publish until the first one arrives (bounded), then check exactly what arrived. */
async function publishUntil<T>(arrived: Promise<T>, publish: () => Promise<unknown>): Promise<T> {
  let done = false;
  void arrived.finally(() => (done = true));
  for (let attempt = 0; attempt < 50 && !done; attempt++) {
    await publish();
    await Promise.race([arrived, new Promise((resolve) => setTimeout(resolve, 100))]);
  }
  return arrived;
}

describe('event bus across processes', () => {
  it('delivers a ping published in this process to a graphql-ws subscriber of the other, only within the organization', async () => {
    const wsUrl = `${other.url.replace(/^http/, 'ws')}/graphql`;
    const client = createClient({ url: wsUrl, webSocketImpl: WebSocket, connectionParams: { 'X-Api-Key': tenant.adminKey } });
    const outsiderClient = createClient({ url: wsUrl, webSocketImpl: WebSocket, connectionParams: { 'X-Api-Key': outsider.adminKey } });
    try {
      const mine = subscribe(client, 'subscription { pings { message sentAt } }');
      const theirs = subscribe(outsiderClient, 'subscription { pings { message } }');
      const message = `hello ${randomUUID()}`;
      const event = await publishUntil(mine.next, () =>
        graphql(platform.url, 'mutation($m: String!) { ping(message: $m) { message } }', { key: tenant.adminKey, variables: { m: message } }),
      );
      expect(event).toEqual({ data: { pings: { message, sentAt: expect.any(String) } } });

      // A large payload travels by reference (NOTIFY carries at most 8000 bytes).
      const large = 'x'.repeat(50_000);
      const second = new Promise((resolve) => {
        const timer = setInterval(() => {
          const found = mine.received.find((value) => value.data?.pings?.message === large);
          if (found) {
            clearInterval(timer);
            resolve(found);
          }
        }, 20);
      });
      await graphql(platform.url, 'mutation($m: String!) { ping(message: $m) { sentAt } }', { key: tenant.adminKey, variables: { m: large } });
      await second;
      expect(theirs.received).toEqual([]);
    } finally {
      await client.dispose();
      await outsiderClient.dispose();
    }
  });

  it('refuses a graphql-ws connection without a valid key', async () => {
    const client = createClient({
      url: `${other.url.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { 'X-Api-Key': 'apk_wrong' },
      retryAttempts: 0,
    });
    const result = subscribe(client, 'subscription { pings { message } }');
    // The connection is refused at connection_init (4403 Forbidden), before any event.
    const rejection = await result.next.then(
      () => expect.unreachable('a subscription without a valid key received an event'),
      (error: unknown) => error as { code?: number; reason?: string },
    );
    expect(rejection.code).toBe(4403);
    expect(result.received).toEqual([]);
    await client.dispose();
  });

  it('delivers subscriptions over SSE as well', async () => {
    const controller = new AbortController();
    const response = await fetch(`${other.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-api-key': tenant.adminKey },
      body: JSON.stringify({ query: 'subscription { pings { message } }' }),
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const message = `sse ${randomUUID()}`;
    let text = '';
    const arrived = (async () => {
      while (!text.includes(message)) {
        const { value, done } = await reader.read();
        if (done) break;
        text += new TextDecoder().decode(value);
      }
      return text;
    })();
    await publishUntil(arrived, () =>
      graphql(platform.url, 'mutation($m: String!) { ping(message: $m) { message } }', { key: tenant.adminKey, variables: { m: message } }),
    );
    expect(text).toContain(`"message":"${message}"`);
    controller.abort();
  });
  it('delivers to a name subscribed after earlier subscriptions to it ended, large payloads included', async () => {
    const bus = platform.deps.events;
    const first = new AbortController();
    const firstSeen = bus.subscribe('system.ping', { key: 'skip-check', signal: first.signal });
    first.abort();
    for await (const _ of firstSeen) throw new Error('an aborted subscription yields nothing');
    // Nobody here follows system.ping now (notifications of it are skipped unparsed) until this:
    const second = new AbortController();
    const seen = bus.subscribe('system.ping', { key: 'skip-check', signal: second.signal });
    const big = 'x'.repeat(50_000);
    await bus.publish('system.ping', { message: big, sentAt: new Date().toISOString() }, 'skip-check');
    const { value } = await seen.next();
    second.abort();
    expect(value).toMatchObject({ message: big });
  });
});
