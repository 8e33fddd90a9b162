// `npm run bench:ingest-pg`: what PostgreSQL spends per ingested run, statement form by statement form,
// as backend CPU read from /proc (a count that holds on a loaded machine, where rows/s does not). The
// same SDK-shaped rows (bench/ingest-payload.ts, normalised and their parameters built before the clock
// starts) go in batches of 100 over one connection into a fresh platform's trace_runs, in rounds that
// interleave the forms, so the table grows evenly under each:
// - ingest's statement (the id claim, the INSERT, usage's deltas), into this week's partition and into
//   the default partition (a week without a partition of its own), claiming ids by trigger or CTE;
// - the bare INSERT (the raw ceiling of bench:ingest), with the id claim by the per-row trigger
//   trace_runs had before (recreated here), by one set-based CTE (what ingest does now), and with no
//   claim at all (the floor, which a platform that must answer 409 for a repeated id cannot use).
// The statement forms are each tried with the id claim they name: "trigger claim" is the claim-less
// SQL with that trigger in place.
// Options: --statements <n> per form and round (default 50, × 100 runs), --rounds <n> (default 2).
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { makeRequests, RUNS_PER_REQUEST } from './ingest-payload.js';
import { createBenchTenant, startBenchPlatform } from './tenant.js';

const CLOCK_TICK_MS = 10; // USER_HZ is 100 on Linux

/** CPU time of one PostgreSQL backend (the server runs on this machine), in ms. */
function backendCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS;
}

async function main() {
  const { values: args } = parseArgs({ options: { statements: { type: 'string', default: '50' }, rounds: { type: 'string', default: '2' } } });
  const STATEMENTS = Number(args.statements);
  const ROUNDS = Number(args.rounds);
  const schemas = await import('../src/platform/ingest/ingest.schemas.js');
  const store = await import('../src/platform/ingest/ingest.store.js');
  const { resolveProjectIds } = await import('../src/platform/services/traces/projects.service.js');
  const platform = await startBenchPlatform({});
  try {
    const { workspace, user } = await createBenchTenant(platform.deps);
    const who = { workspaceId: workspace.id, apiKeyId: null, userId: user.id };
    const session = 'bench-ingest-pg';
    const projectId = (await resolveProjectIds(platform.deps.db.pool, workspace.id, { ids: [], names: [session] })).byName.get(session)!;
    const DEFAULT_PARTITION_AGO_MS = -3 * 365 * 86_400_000; // three years ahead: no week partition exists there
    const parameterSets = (count: number, startAgoMs?: number) =>
      makeRequests(session, count, Math.floor(Math.random() * 1e9), startAgoMs).map((request) => {
        const runs = request.runs.map((raw, i) => ({ ...schemas.normalizeRunCreate(raw, ['post', i]), sessionId: projectId }));
        return store.runColumnArrays(runs, who);
      });

    type Form = { name: string; sql: string; claimTrigger: boolean; startAgoMs?: number };
    const forms: Form[] = [
      { name: "ingest's statement (trigger claim + usage deltas), week partition", sql: store.insertRunsWithHooksSql('none'), claimTrigger: true },
      { name: "ingest's statement (trigger claim + usage deltas), default partition", sql: store.insertRunsWithHooksSql('none'), claimTrigger: true, startAgoMs: DEFAULT_PARTITION_AGO_MS },
      { name: "ingest's statement (CTE claim + usage deltas), week partition", sql: store.insertRunsWithHooksSql('cte'), claimTrigger: false },
      { name: "ingest's statement (CTE claim + usage deltas), default partition", sql: store.insertRunsWithHooksSql('cte'), claimTrigger: false, startAgoMs: DEFAULT_PARTITION_AGO_MS },
      { name: 'bare INSERT, trigger claim (per row)', sql: store.insertRunsUnnestSql('', 'none'), claimTrigger: true },
      { name: 'bare INSERT, CTE claim (set-based)', sql: store.insertRunsUnnestSql('', 'cte'), claimTrigger: false },
      { name: 'bare INSERT, no claim (floor; no 409 possible)', sql: store.insertRunsUnnestSql('', 'none'), claimTrigger: false },
    ];
    const totals = new Map<string, { cpuMs: number; wallMs: number; runs: number; stored: number }>(forms.map((form) => [form.name, { cpuMs: 0, wallMs: 0, runs: 0, stored: 0 }]));
    const client = await platform.deps.db.pool.connect();
    try {
      const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      // Warm-up: each statement once (plans, caches).
      for (const form of forms) {
        await setClaimTrigger(client, form.claimTrigger);
        await client.query({ text: form.sql, values: parameterSets(1, form.startAgoMs)[0]! });
      }
      for (let round = 0; round < ROUNDS; round++) {
        for (const form of forms) {
          const sets = parameterSets(STATEMENTS, form.startAgoMs);
          await setClaimTrigger(client, form.claimTrigger);
          const cpu = backendCpuMs(pid);
          const wall = performance.now();
          let stored = 0;
          for (const values of sets) stored += (await client.query({ name: `bench.${forms.indexOf(form)}`, text: form.sql, values })).rowCount ?? 0;
          const total = totals.get(form.name)!;
          total.cpuMs += backendCpuMs(pid) - cpu;
          total.wallMs += performance.now() - wall;
          total.runs += sets.length * RUNS_PER_REQUEST;
          total.stored += stored;
        }
      }
      await setClaimTrigger(client, false);
    } finally {
      client.release();
    }
    console.log('');
    console.log(`PostgreSQL backend CPU per run (/proc, 10 ms ticks), ${ROUNDS} rounds × ${STATEMENTS} statements × ${RUNS_PER_REQUEST} runs per form, one connection:`);
    for (const [name, total] of totals) {
      console.log(`  ${name.padEnd(72)} ${((total.cpuMs / total.runs) * 1000).toFixed(1).padStart(6)} µs CPU   ${((total.wallMs / total.runs) * 1000).toFixed(1).padStart(6)} µs wall   (${total.runs} runs)`);
    }
    console.log(`load average ${loadavg().map((n) => n.toFixed(1)).join(' ')} (2 cores shared with other processes: wall times move with it, CPU barely)`);
  } finally {
    await platform.stop();
  }
}

/**
 * The per-row claim trigger trace_runs had until migration trace_run_ids_claimed_set_based (the same
 * function), created for the forms that measure it and dropped for the others.
 */
async function setClaimTrigger(client: import('pg').PoolClient, enabled: boolean) {
  await client.query('DROP TRIGGER IF EXISTS bench_claim_id ON trace_runs');
  if (!enabled) return;
  await client.query(`CREATE OR REPLACE FUNCTION bench_claim_id() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO trace_run_ids (tenant_id, id, start_time) VALUES (NEW.tenant_id, NEW.id, NEW.start_time) ON CONFLICT DO NOTHING;
      IF NOT FOUND THEN
        RETURN NULL;
      END IF;
      RETURN NEW;
    END $$`);
  await client.query('CREATE TRIGGER bench_claim_id BEFORE INSERT ON trace_runs FOR EACH ROW EXECUTE FUNCTION bench_claim_id()');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
