// A raw client of the thread streaming protocol's WebSocket (GET …/threads/{id}/stream/events), with
// the headers an application's own client would send: commands with their answers, and every event
// the socket's subscriptions deliver. For tests that check who may open and use a socket.
import WebSocket from 'ws';

type Json = Record<string, unknown>;
type ProtocolEvent = { type: 'event'; event_id: string; seq: number; method: string; params: { namespace: string[]; data: Json } };
export type ProtocolSocket = {
  ws: WebSocket;
  events: ProtocolEvent[];
  /** Every answer by command id (null: a frame that could not be read), in the order they came. */
  answers: Map<number | null, Json[]>;
  /** Sends a raw frame, as a client that gets the protocol wrong would. */
  send(frame: string): void;
  /** Sends a command; resolves with its first answer. */
  command(method: string, params?: Json): Promise<Json>;
  until(condition: () => boolean, ms?: number): Promise<void>;
  close(): void;
};

const socketUrl = (apiUrl: string, threadId: string) => `${apiUrl.replace(/^http/, 'ws')}/threads/${threadId}/stream/events`;

/** Opens the socket of a thread; rejects if the upgrade is refused. */
export async function openProtocolSocket(apiUrl: string, threadId: string, headers: Record<string, string> = {}): Promise<ProtocolSocket> {
  const ws = new WebSocket(socketUrl(apiUrl, threadId), { headers });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject).once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`))));
  const events: ProtocolEvent[] = [];
  const answers = new Map<number | null, Json[]>();
  const waiters: (() => void)[] = [];
  ws.on('message', (data) => {
    const message = JSON.parse(String(data)) as Json;
    if (message.type === 'event') events.push(message as unknown as ProtocolEvent);
    else answers.set(message.id as number | null, [...(answers.get(message.id as number | null) ?? []), message]);
    for (const wake of waiters.splice(0)) wake();
  });
  const until = async (condition: () => boolean, ms = 15_000) => {
    const deadline = Date.now() + ms;
    while (!condition()) {
      if (Date.now() > deadline) throw new Error('timed out waiting on the socket');
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 200);
      });
    }
  };
  let nextId = 1;
  return {
    ws,
    events,
    answers,
    until,
    send: (frame) => ws.send(frame),
    async command(method, params = {}) {
      const id = nextId++;
      ws.send(JSON.stringify({ id, method, params }));
      await until(() => answers.has(id));
      return answers.get(id)![0]!;
    },
    close: () => ws.close(),
  };
}

/** The status and body with which the upgrade of a thread's socket is refused (0: it was accepted). */
export async function refusedUpgrade(apiUrl: string, threadId: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  const ws = new WebSocket(socketUrl(apiUrl, threadId), { headers });
  return new Promise((resolve, reject) => {
    ws.once('open', () => {
      ws.close();
      resolve({ status: 0, body: '' });
    });
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.once('error', (error) => reject(error));
  });
}

/**
 * The protocol's SSE stream of a thread (POST …/stream/events with `request`): each event as it
 * comes, with the `id:` line of its frame. Ends with the stream, or when the caller stops iterating
 * (the request is aborted then); throws when the stream is refused.
 */
export async function* protocolSseEvents<E = ProtocolEvent>(
  apiUrl: string,
  threadId: string,
  request: Json,
  options: { signal?: AbortSignal; headers?: Record<string, string> } = {},
): AsyncGenerator<{ id: string | undefined; event: E }> {
  const abort = new AbortController();
  const signal = options.signal ? AbortSignal.any([abort.signal, options.signal]) : abort.signal;
  try {
    const response = await fetch(`${apiUrl}/threads/${threadId}/stream/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...options.headers },
      body: JSON.stringify(request),
      signal,
    });
    if (response.status !== 200) throw new Error(`the event stream answered ${response.status}: ${await response.text()}`);
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const lines = buffer.slice(0, end).split('\n');
        buffer = buffer.slice(end + 2);
        const data = lines.find((line) => line.startsWith('data: '));
        if (data) yield { id: lines.find((line) => line.startsWith('id: '))?.slice(4), event: JSON.parse(data.slice(6)) as E };
      }
    }
  } finally {
    abort.abort();
  }
}
