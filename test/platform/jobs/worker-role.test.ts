// The worker role on its own (`start --role worker`): no HTTP listener, and it works the platform's
// jobs. And the run-recovery sweep, which an agent server's own jobs work on its database: a run left
// `running` by a runtime that no longer holds its liveness lock goes back to the queue (or, after its
// last attempt, is ended as error), and its thread's followers hear it.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { newId } from '../../../src/ids.js';
import { QUEUES } from '../../../src/agent-server/jobs/boss.js';
import { runQueueFor } from '../../../src/agent-server/services/runs/run-queue.js';
import { withTransaction } from '../../../src/db.js';
import { databaseUrl, startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { startDeploymentWorker } from '../../support/deployed.js';
import { ensureDeploymentDatabase } from '../../../src/platform/services/deployments/deployment-database.js';
import { migrateDatabase } from '../../../src/database/migrate.js';
import { type PlatformProcess, spawnPlatform } from '../../support/processes.js';

let platform: TestPlatform;
let worker: PlatformProcess;

beforeAll(async () => {
  platform = await startTestPlatform();
  worker = await spawnPlatform(
    ['start', '--role', 'worker'],
    {
      DATABASE_URL: databaseUrl(),
      AGENT_PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'),
      AGENT_PLATFORM_DATA_DIR: inject('dataDir'),
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
    },
    120_000,
    /Agent Platform is running \(roles: worker;/,
  );
}, 150_000);
afterAll(async () => {
  await worker?.stop();
  await platform?.stop();
});

describe('the worker role alone', () => {
  it('listens on no port', () => {
    expect(worker.output()).toContain('no HTTP listener without the api role');
  });

  it("puts a run whose runtime died back in the queue when an agent server's sweep job runs, and ends it as error after 3 attempts", async () => {
    const deploymentId = newId();
    // An agent server's jobs on its deployment's own database.
    const { url } = await ensureDeploymentDatabase(platform.deps, deploymentId, { local: true });
    await migrateDatabase(url, platform.deps.logger, 'agent-server');
    const agentServer = await startDeploymentWorker(url, { jobs: true });
    const { db, events } = agentServer.deps;
    const boss = agentServer.deps.boss!;
    const queue = runQueueFor(boss, deploymentId);
    /** A run claimed (its `attempt`-th time) by a runtime whose process is gone (nobody holds its lock), its job active. */
    const orphan = async (attempt: number) => {
      const [runId, threadId, jobId] = [newId(), newId(), newId()];
      await withTransaction(db, async (client) => {
        await client.query(
          `INSERT INTO agent_runs (id, deployment_id, thread_id, assistant_id, status, worker_id, job_id, attempt, updated_at) VALUES ($1, $2, $3, $4, 'running', $5, $6, $7, now())`,
          [runId, deploymentId, threadId, newId(), newId(), jobId, attempt],
        );
        await queue.send(client, { runId, threadId, stateful: true, jobId });
      });
      const [fetched] = await boss.fetch<{ runId: string }>(queue.name);
      expect(fetched?.id).toBe(jobId);
      return { runId, threadId, jobId };
    };
    /** Sends the sweep and answers the run's next status on its thread. */
    const sweep = async (threadId: string) => {
      const statuses = events.subscribe('runs.status', { key: threadId });
      await boss.send(QUEUES.runsSweep.name, {});
      const { value } = await statuses.next();
      await statuses.return(undefined);
      return value;
    };
    try {
      const retried = await orphan(1);
      expect(await sweep(retried.threadId)).toEqual({ runId: retried.runId, threadId: retried.threadId, status: 'pending' });
      const { rows: run } = await db.pool.query('SELECT status, attempt FROM agent_runs WHERE id = $1', [retried.runId]);
      expect(run[0]).toEqual({ status: 'pending', attempt: 1 });
      // Its job is its thread's next again.
      const [again] = await boss.fetch<{ runId: string }>(queue.name);
      expect(again).toMatchObject({ id: retried.jobId, data: { runId: retried.runId } });
      await boss.complete(queue.name, retried.jobId);

      const given = await orphan(3);
      expect(await sweep(given.threadId)).toEqual({ runId: given.runId, threadId: given.threadId, status: 'error' });
      const { rows } = await db.pool.query('SELECT status, output FROM agent_runs WHERE id = $1', [given.runId]);
      expect(rows[0]).toMatchObject({ status: 'error', output: { __error__: { error: 'RuntimeError', message: expect.stringContaining('3 attempts') } } });
      expect(await boss.fetch(queue.name)).toEqual([]);
    } finally {
      await agentServer.stop();
    }
  });
});
