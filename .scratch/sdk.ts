import { Client } from 'langgraph-sdk-thread-stream';
import WebSocket from 'ws';
const url = process.argv[2] ?? 'http://127.0.0.1:2400';
const transport = (process.argv[3] ?? 'sse') as 'sse' | 'websocket';
const client = new Client({ apiUrl: url });
const thread = client.threads.stream({ assistantId: 'nested', transport, ...(transport === 'websocket' ? { webSocketFactory: (u: string) => new WebSocket(u) as never } : {}) });
const t0 = Date.now();
await thread.run.start({ input: { trail: [] } });
const values: unknown[] = [];
for await (const v of thread.values) values.push(v);
console.log('values', JSON.stringify(values), Date.now() - t0, 'ms');
console.log('output', JSON.stringify(await thread.output));
// second run on same thread
const raw = await thread.subscribe({ channels: ['lifecycle'], namespaces: [['child']], depth: 1 });
await thread.run.start({ input: { trail: ['again'] } });
const lc: unknown[] = [];
const timer = setTimeout(() => raw.unsubscribe(), 3000);
for await (const e of raw) { lc.push((e as any).params.namespace.join('/') + ':' + (e as any).params.data.event); }
clearTimeout(timer);
console.log('lifecycle child', lc);
await thread.close();
