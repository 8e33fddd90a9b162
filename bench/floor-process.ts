// The floors as a process of their own, for bench:cpu: the graph with a MemorySaver, and with LangGraph's
// own PostgresSaver on an embedded PostgreSQL of its own (what a user's script would make durable with,
// no server). It starts that PostgreSQL in the folder named by its argument, then waits for a
// window's order ({ seconds, concurrency, saver }) over IPC and answers with the runs completed; the
// bench reads the CPU of this process and of its PostgreSQL from /proc, as it does a server's.
import { MemorySaver } from '@langchain/langgraph';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { pino } from 'pino';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres.js';
import { createPool } from '../src/database/pool.js';
import { floorWindow } from './graph-floor.js';

const database = await startEmbeddedPostgres(process.argv[2]!, pino({ level: 'silent' }), { maxConnections: 100, reservedConnections: 10 });
// As the platform's pools: a connection PostgreSQL ends (its stop at the bench's end) is not an uncaught error.
const pool = createPool({ connectionString: database.url });
const savers = { memory: new MemorySaver(), postgres: new PostgresSaver(pool) };
await savers.postgres.setup();

process.on('message', (order: { seconds: number; concurrency: number; saver: keyof typeof savers }) => {
  void floorWindow(savers[order.saver], order.seconds, order.concurrency).then((completed) => process.send!({ completed }));
});
process.on('disconnect', () => void pool.end().then(() => database.stop()).finally(() => process.exit(0)));
process.send!({ ready: true });
