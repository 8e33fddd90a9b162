// Statements per run: npx tsx bench/statements-per-run.ts <agent server url> <its DATABASE_URL> [runs]
// against a `serve` whose PostgreSQL loads pg_stat_statements (shared_preload_libraries). Counts the
// SQL statements of stateless runs/wait (the bench:runs throughput row) and of thread stream runs,
// minus as long idle (timers, pollers), and prints the most frequent. Prints figures, asserts nothing.
import { Client } from '@langchain/langgraph-sdk';
import pg from 'pg';

const [url, databaseUrl, runsText] = process.argv.slice(2);
const RUNS = Number(runsText ?? 100);
const client = new Client({ apiUrl: url });
const db = new pg.Client({ connectionString: databaseUrl });
await db.connect();
await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
const dbName = (await db.query('SELECT current_database() AS name')).rows[0].name;
const reset = () => db.query('SELECT pg_stat_statements_reset()');
const read = async () => {
  const { rows } = await db.query(
    `SELECT s.query, s.calls::int FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1 AND s.query NOT LIKE '%pg_stat_statements%' ORDER BY s.calls DESC`,
    [dbName],
  );
  return { total: rows.reduce((sum, row) => sum + row.calls, 0), rows };
};
const input = { steps: [] };
for (let i = 0; i < 10; i++) await client.runs.wait(null, 'two_node', { input }); // warm up

async function measure(label: string, work: () => Promise<void>) {
  await reset();
  const started = Date.now();
  await work();
  const elapsed = Date.now() - started;
  const busy = await read();
  await reset();
  await new Promise((resolve) => setTimeout(resolve, elapsed));
  const idle = await read();
  console.log(`${label}: ${((busy.total - idle.total) / RUNS).toFixed(2)} statements per run (${busy.total} in ${elapsed} ms, ${idle.total} idle for as long)`);
  for (const row of busy.rows.slice(0, 25)) console.log(`  ${String(row.calls).padStart(6)}  ${row.query.replace(/\s+/g, ' ').slice(0, 150)}`);
}
await measure('stateless runs/wait', async () => {
  for (let i = 0; i < RUNS; i++) await client.runs.wait(null, 'two_node', { input });
});
const thread = await client.threads.create();
await measure('thread runs/stream', async () => {
  for (let i = 0; i < RUNS; i++) for await (const _ of client.runs.stream(thread.thread_id, 'two_node', { input, streamMode: 'updates' }));
});
await db.end();
