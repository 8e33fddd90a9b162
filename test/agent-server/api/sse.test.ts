// SSE keep-alives as the official clients read them, at a real `serve` (or, with
// TEST_AGENT_SERVER=deployed, at a deployed revision's url through the gateway): with a keep-alive
// every 50 ms (AGENT_PLATFORM_SSE_HEARTBEAT_SECONDS), a run that waits 300 ms in each of its three
// nodes sits idle past several of them on every SSE route (a run's stream, its join, the thread's
// stream, the thread streaming protocol, GraphQL over SSE), and each client still gets only the
// run's own events, each once. Each client's fetch counts the keep-alives its response carried, so a
// stream that never idled past one cannot pass.
import { createClient } from 'graphql-sse';
import { Client } from '@langchain/langgraph-sdk';
import { Client as ThreadStreamClient } from 'langgraph-sdk-thread-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, removeDir, startServe, type ServeProcess } from '../../support/serve.js';

const HEARTBEAT_SECONDS = 0.05;
const input = { label: 'idle', delay_ms: 300 };
// What streaming `slow` in the custom and updates modes sends: its metadata, then per node its custom event and its update.
const RUN_EVENTS = ['metadata', 'custom', 'updates', 'custom', 'updates', 'custom', 'updates'];

let server: ServeProcess;
beforeAll(async () => {
  server = await startServe({ env: { AGENT_PLATFORM_SSE_HEARTBEAT_SECONDS: String(HEARTBEAT_SECONDS) } });
});
afterAll(async () => {
  await server?.stop();
  removeDir(server?.dir);
});

/**
 * A fetch that counts the comment lines (keep-alives) of every event stream it receives, as bytes
 * before any client's decoder sees them, and how many streams it opened (a client that reconnects
 * opens another).
 */
function countingFetch() {
  const counted = { keepAlives: 0, streams: 0 };
  const fetchStreams = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, init);
    if (!response.body || !response.headers.get('content-type')?.startsWith('text/event-stream')) return response;
    counted.streams += 1;
    const decoder = new TextDecoder();
    let partial = '';
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          const lines = (partial + decoder.decode(chunk, { stream: true })).split(/\r\n|\r|\n/);
          partial = lines.pop()!;
          counted.keepAlives += lines.filter((line) => line.startsWith(':')).length;
          controller.enqueue(chunk);
        },
      }),
    );
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  return { counted, fetch: fetchStreams as typeof fetch };
}

/** The SDK's client at the server, with a counting fetch. */
function sdkClient() {
  const counting = countingFetch();
  return { counted: counting.counted, client: new Client({ apiUrl: server.url, callerOptions: { maxRetries: 0, fetch: counting.fetch } }) };
}

// Idle 3 × 300 ms at one keep-alive per 50 ms: a few at least, whatever the machine's load does to timers.
const IDLED_PAST_KEEP_ALIVES = 4;

type Part = { event: string; data: unknown; id?: string };

/** The parts' event names, and that their ids are distinct (each event once). */
function expectOnlyTheRunsEvents(parts: Part[]) {
  expect(parts.map((part) => part.event)).toEqual(RUN_EVENTS);
  expect(parts.every((part) => part.data !== null && part.data !== undefined)).toBe(true);
  expect(new Set(parts.map((part) => part.id)).size).toBe(parts.length);
}

describe('keep-alives on idle SSE streams', () => {
  it("a run's stream (runs.stream) gets only the run's events, each once", async () => {
    const { client, counted } = sdkClient();
    const thread = await client.threads.create();
    const parts = (await collect(client.runs.stream(thread.thread_id, 'slow', { input, streamMode: ['custom', 'updates'] }))) as Part[];
    expectOnlyTheRunsEvents(parts);
    expect(parts.map((part) => part.id)).toEqual(RUN_EVENTS.map((_, index) => String(index)));
    expect(counted.keepAlives).toBeGreaterThanOrEqual(IDLED_PAST_KEEP_ALIVES);
  });

  it("a run's join (runs.joinStream) and its thread's stream (threads.joinStream) get only the run's events, each once", async () => {
    const { client, counted } = sdkClient();
    const thread = await client.threads.create();
    const following = new AbortController();
    // The thread's stream never ends by itself: it is read up to the run's last event, then closed.
    const threadStream = (async () => {
      const parts: Part[] = [];
      for await (const part of client.threads.joinStream(thread.thread_id, { signal: following.signal }) as AsyncIterable<Part>) {
        parts.push(part);
        if (parts.length === RUN_EVENTS.length) break;
      }
      return parts;
    })();
    const run = await client.runs.create(thread.thread_id, 'slow', { input, streamMode: ['custom', 'updates'] });
    const joined = (await collect(client.runs.joinStream(thread.thread_id, run.run_id))) as Part[];
    const followed = await threadStream;
    following.abort();
    expectOnlyTheRunsEvents(joined);
    expectOnlyTheRunsEvents(followed);
    expect(followed.map((part) => part.data)).toEqual(joined.map((part) => part.data));
    // Two streams, each idle through the run.
    expect(counted.keepAlives).toBeGreaterThanOrEqual(2 * IDLED_PAST_KEEP_ALIVES);
  });

  it('the thread streaming protocol over SSE (SDK 1.15 ThreadStream) gets each event once, without reconnecting', async () => {
    const counting = countingFetch();
    const reconnects: unknown[] = [];
    const client = new ThreadStreamClient({ apiUrl: server.url });
    const thread = client.threads.stream({ assistantId: 'slow', transport: 'sse', fetch: counting.fetch, onReconnect: (attempt) => reconnects.push(attempt) });
    try {
      type ProtocolEvent = { event_id: string; method: string; params: { namespace: string[]; data: Record<string, unknown> } };
      // The thread exists once its run starts; its stream replays the run from the start.
      await thread.run.start({ input });
      const subscription = await thread.subscribe({ channels: ['custom', 'lifecycle'] });
      const events: ProtocolEvent[] = [];
      for await (const event of subscription as AsyncIterable<ProtocolEvent>) {
        events.push(event);
        if (event.method === 'lifecycle' && event.params.namespace.length === 0 && event.params.data.event === 'completed') break;
      }
      const custom = events.filter((event) => event.method === 'custom').map((event) => (event.params.data.payload as { step: string }).step);
      expect(custom).toEqual(['first', 'second', 'third']);
      expect(new Set(events.map((event) => event.event_id)).size).toBe(events.length);
      expect(reconnects).toEqual([]);
      expect(counting.counted.keepAlives).toBeGreaterThanOrEqual(IDLED_PAST_KEEP_ALIVES);
    } finally {
      await thread.close();
    }
  });

  it("GraphQL over SSE (graphql-sse's client) gets the run's events, each once", async () => {
    const counting = countingFetch();
    const { client } = sdkClient();
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, 'slow', { input, streamMode: ['custom', 'updates'] });
    // graphql-yoga's own keep-alive (`:` and a blank line, every 12 s; 300 ms under NODE_ENV=test, as here).
    const graphql = createClient({ url: `${server.url}/graphql`, fetchFn: counting.fetch });
    const inDeployment = server.deployed ? { deploymentId: server.deploymentId } : {};
    const received: { runEvents: { seq: number; event: string } }[] = [];
    try {
      for await (const result of graphql.iterate<{ runEvents: { seq: number; event: string } }>({
        query: 'subscription($runId: ID!, $deploymentId: ID) { runEvents(runId: $runId, deploymentId: $deploymentId) { seq event } }',
        variables: { runId: run.run_id, ...inDeployment },
      })) {
        expect(result.errors).toBeUndefined();
        received.push(result.data!);
      }
    } finally {
      graphql.dispose();
    }
    expect(received.map((data) => data.runEvents.event)).toEqual(RUN_EVENTS);
    expect(received.map((data) => data.runEvents.seq)).toEqual(RUN_EVENTS.map((_, index) => index + 1));
    // One at the start and at least one while the run idled.
    expect(counting.counted.keepAlives).toBeGreaterThanOrEqual(2);
  });
});
