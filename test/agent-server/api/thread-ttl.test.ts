// Thread TTL through the official SDK against a real `serve` process: the sweep deletes an expired
// thread with its runs, stream events, checkpoints and queue jobs and nothing else, and a run started
// while a sweep runs is either kept with its thread or refused (never accepted and then lost). A second
// server's langgraph.json sets `checkpointer.ttl` (default TTL, sweep interval), and its environment
// the queue's finished-job retention.
import { readFileSync, writeFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteExpiredThreads } from '../../../src/agent-server/services/threads/threads.store.js';
import { sweepExpiredThreads } from '../../../src/agent-server/jobs/threads-sweep.job.js';
import { atDeployed, fixtureConfig, removeDir, startServe, type ServeProcess } from '../../support/serve.js';

let server: ServeProcess;
/** Its langgraph.json: `checkpointer.ttl` of 10 minutes, swept every 5; finished jobs kept 2 minutes. */
let configured: ServeProcess;
/** On `server`'s database, and on `configured`'s (the same one at serve; each deployed revision has its own). */
let pool: pg.Pool;
let configuredPool: pg.Pool;
beforeAll(async () => {
  const project = fixtureConfig();
  const config = JSON.parse(readFileSync(project.configPath, 'utf8')) as Record<string, unknown>;
  config.checkpointer = { ttl: { strategy: 'delete', default_ttl: 10, sweep_interval_minutes: 5 } };
  writeFileSync(project.configPath, JSON.stringify(config));
  [server, configured] = await Promise.all([
    startServe({ readyTimeoutMs: 170_000 }),
    startServe({ ...project, env: { AGENT_PLATFORM_JOB_RETENTION_SECONDS: '120' }, readyTimeoutMs: 170_000 }),
  ]);
  pool = new pg.Pool({ connectionString: server.databaseUrl, max: 3 });
  configuredPool = new pg.Pool({ connectionString: configured.databaseUrl, max: 3 });
}, 190_000);
afterAll(async () => {
  await Promise.all([pool?.end(), configuredPool?.end()]);
  await Promise.all([server?.stop(), configured?.stop()]);
  removeDir(server?.dir);
  removeDir(configured?.dir);
});

/** Rows each table holds for a thread (runs, their events and jobs, checkpoints). */
async function owned(threadId: string, on = pool) {
  const { rows } = await on.query<Record<string, number>>(
    `WITH runs AS (SELECT id, job_id FROM agent_runs WHERE thread_id = $1)
     SELECT (SELECT count(*) FROM agent_threads WHERE id = $1)::int AS threads,
            (SELECT count(*) FROM runs)::int AS runs,
            (SELECT count(*) FROM run_events WHERE run_id IN (SELECT id FROM runs))::int AS events,
            (SELECT count(*) FROM pgboss.job WHERE id::text IN (SELECT job_id FROM runs))::int AS jobs,
            (SELECT count(*) FROM langgraph.checkpoints WHERE thread_id = $1::text)::int AS checkpoints,
            (SELECT count(*) FROM langgraph.checkpoint_blobs WHERE thread_id = $1::text)::int AS blobs,
            (SELECT count(*) FROM langgraph.checkpoint_writes WHERE thread_id = $1::text)::int AS writes`,
    [threadId],
  );
  return rows[0]!;
}

const age = (threadId: string, minutes: number, on = pool) =>
  on.query(`UPDATE agent_threads SET updated_at = now() - make_interval(mins => $2) WHERE id = $1`, [threadId, minutes]);

/** Sweeps until nothing more is due (other tests' threads may be due too). */
async function sweep() {
  while ((await deleteExpiredThreads({ pool }, 200)).length === 200);
}

describe('thread TTL', () => {
  it('takes ttl as the SDK sends it (minutes, or {ttl, strategy}) and rejects a bad one with 422', async () => {
    const a = await server.client.threads.create({ ttl: { ttl: 1, strategy: 'delete' } });
    const b = await server.client.threads.create({ ttl: 5 } as never);
    const { rows } = await pool.query<{ id: string; ttl_minutes: number }>('SELECT id, ttl_minutes FROM agent_threads WHERE id = ANY($1::uuid[])', [
      [a.thread_id, b.thread_id],
    ]);
    expect(Object.fromEntries(rows.map((row) => [row.id, row.ttl_minutes]))).toEqual({ [a.thread_id]: 1, [b.thread_id]: 5 });
    await server.client.threads.update(a.thread_id, { ttl: { ttl: 30, strategy: 'delete' } } as never);
    expect((await pool.query('SELECT ttl_minutes FROM agent_threads WHERE id = $1', [a.thread_id])).rows[0].ttl_minutes).toBe(30);
    await expect(server.client.threads.create({ ttl: { ttl: 1, strategy: 'keep' } } as never)).rejects.toThrow(/HTTP 422/);
    await expect(server.client.threads.create({ ttl: -1 } as never)).rejects.toThrow(/HTTP 422/);
  });

  it('deletes an expired thread with everything it owns, and nothing else', async () => {
    const expired = await server.client.threads.create({ ttl: { ttl: 1, strategy: 'delete' } });
    const alive = await server.client.threads.create({ ttl: { ttl: 5, strategy: 'delete' } });
    const forever = await server.client.threads.create();
    for (const thread of [expired, alive, forever]) {
      await server.client.runs.wait(thread.thread_id, 'interrupt', { input: { topic: 'tea' } });
    }
    const before = await owned(expired.thread_id);
    expect(before).toMatchObject({ threads: 1, runs: 1, jobs: 1 });
    expect(before.events).toBeGreaterThan(0);
    expect(before.checkpoints).toBeGreaterThan(0);
    for (const thread of [expired, alive, forever]) await age(thread.thread_id, 2);
    const aliveBefore = await owned(alive.thread_id);
    const foreverBefore = await owned(forever.thread_id);

    await sweep();

    expect(await owned(expired.thread_id)).toEqual({ threads: 0, runs: 0, events: 0, jobs: 0, checkpoints: 0, blobs: 0, writes: 0 });
    await expect(server.client.threads.get(expired.thread_id)).rejects.toThrow(/HTTP 404/);
    expect(await owned(alive.thread_id)).toEqual(aliveBefore);
    expect(await owned(forever.thread_id)).toEqual(foreverBefore);
    expect((await server.client.threads.getState(alive.thread_id)).values).toEqual({ topic: 'tea' });
  });

  it('never loses a run started while a sweep runs: it is kept with its thread, or refused with 404', async () => {
    for (let round = 0; round < 6; round++) {
      const thread = await server.client.threads.create({ ttl: { ttl: 1, strategy: 'delete' } });
      await age(thread.thread_id, 2);
      const [run] = await Promise.allSettled([
        server.client.runs.wait(thread.thread_id, 'interrupt', { input: { topic: `round ${round}` } }),
        // Half the rounds start the sweep first, half the run.
        new Promise((resolve) => setTimeout(resolve, round % 2 ? 0 : 5)).then(sweep),
      ]);
      const after = await owned(thread.thread_id);
      if (run.status === 'fulfilled') {
        expect(after).toMatchObject({ threads: 1, runs: 1 });
        expect((await server.client.threads.getState(thread.thread_id)).values).toEqual({ topic: `round ${round}` });
      } else {
        expect(String(run.reason)).toMatch(/HTTP 404/);
        expect(after).toMatchObject({ threads: 0, runs: 0, checkpoints: 0 });
      }
    }
  });

  it('applies langgraph.json checkpointer.ttl: its default to threads without a TTL, swept at its interval', async () => {
    expect((await configuredPool.query('SELECT thread_default_ttl_minutes, thread_sweep_interval_minutes FROM served_deployments WHERE id = $1', [configured.deploymentId])).rows[0]).toEqual({
      thread_default_ttl_minutes: 10,
      thread_sweep_interval_minutes: 5,
    });
    const defaulted = await configured.client.threads.create();
    const ownTtl = await configured.client.threads.create({ ttl: { ttl: 60, strategy: 'delete' } });
    const young = await configured.client.threads.create();
    const elsewhere = await server.client.threads.create();
    await configured.client.runs.wait(defaulted.thread_id, 'interrupt', { input: { topic: 'tea' } });
    for (const thread of [defaulted, ownTtl]) await age(thread.thread_id, 11, configuredPool);
    await age(elsewhere.thread_id, 11);
    await age(young.thread_id, 9, configuredPool);
    const sweptAgo = (minutes: number) =>
      configuredPool.query('UPDATE served_deployments SET threads_swept_at = now() - make_interval(mins => $2) WHERE id = $1', [configured.deploymentId, minutes]);
    // Each database's sweep (one database at serve).
    const sweepJob = async () => {
      for (const on of server.databaseUrl === configured.databaseUrl ? [configuredPool] : [configuredPool, pool]) await sweepExpiredThreads({ db: { pool: on } } as never);
    };

    // Swept 2 minutes ago, with an interval of 5: not yet.
    await sweptAgo(2);
    await sweepJob();
    expect(await owned(defaulted.thread_id, configuredPool)).toMatchObject({ threads: 1, runs: 1 });

    await sweptAgo(5);
    await sweepJob();
    expect(await owned(defaulted.thread_id, configuredPool)).toEqual({ threads: 0, runs: 0, events: 0, jobs: 0, checkpoints: 0, blobs: 0, writes: 0 });
    // Its own TTL wins over the default; younger than the default stays; another deployment's default (none) is its own.
    for (const thread of [ownTtl, young]) expect((await configured.client.threads.get(thread.thread_id)).thread_id).toBe(thread.thread_id);
    expect((await server.client.threads.get(elsewhere.thread_id)).thread_id).toBe(elsewhere.thread_id);
    // The sweep recorded its visit, so the next one waits the interval again.
    const { rows } = await configuredPool.query(`SELECT threads_swept_at > now() - interval '1 minute' AS recent FROM served_deployments WHERE id = $1`, [configured.deploymentId]);
    expect(rows[0].recent).toBe(true);
  });

  // A setting of serve's process: a deployed agent server keeps the default (a deployment's environment takes no AGENT_PLATFORM_*).
  it.skipIf(atDeployed)('keeps finished queue jobs for AGENT_PLATFORM_JOB_RETENTION_SECONDS', async () => {
    const thread = await configured.client.threads.create();
    await configured.client.runs.wait(thread.thread_id, 'interrupt', { input: { topic: 'tea' } });
    const { rows } = await configuredPool.query<{ deletion_seconds: number; queue_deletion_seconds: number }>(
      `SELECT j.deletion_seconds, q.deletion_seconds AS queue_deletion_seconds
         FROM agent_runs r JOIN pgboss.job j ON j.id::text = r.job_id JOIN pgboss.queue q ON q.name = j.name
        WHERE r.thread_id = $1`,
      [thread.thread_id],
    );
    expect(rows).toEqual([{ deletion_seconds: 120, queue_deletion_seconds: 120 }]);
  });
});
