// The worker role on its own (`start --role worker`): no HTTP listener, and it works the platform's
// jobs. And the run-recovery sweep, which an agent server's own jobs work on its database: a run left
// `running` by a runtime that no longer holds its liveness lock is ended as error, and its thread's
// followers hear it.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { newId } from '../../../src/ids.js';
import { QUEUES } from '../../../src/agent-server/jobs/boss.js';
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

  it("ends a run whose runtime died when an agent server's sweep job runs", async () => {
    const [runId, threadId, deploymentId] = [newId(), newId(), newId()];
    // An agent server's jobs on its deployment's own database.
    const { url } = await ensureDeploymentDatabase(platform.deps, deploymentId, { local: true });
    await migrateDatabase(url, platform.deps.logger, 'agent-server');
    const agentServer = await startDeploymentWorker(url, { jobs: true });
    try {
      // A run claimed by a runtime (worker id) whose process is gone: nobody holds its lock.
      await agentServer.deps.db.pool.query(
        `INSERT INTO agent_runs (id, deployment_id, thread_id, assistant_id, status, worker_id, updated_at) VALUES ($1, $2, $3, $4, 'running', $5, now())`,
        [runId, deploymentId, threadId, newId(), newId()],
      );
      const statuses = agentServer.deps.events.subscribe('runs.status', { key: threadId });
      await agentServer.deps.boss!.send(QUEUES.runsSweep.name, {});
      const { value } = await statuses.next();
      await statuses.return(undefined);
      expect(value).toEqual({ runId, threadId, status: 'error' });
      const { rows } = await agentServer.deps.db.pool.query('SELECT status, output FROM agent_runs WHERE id = $1', [runId]);
      expect(rows[0]).toMatchObject({ status: 'error', output: { __error__: { error: 'RuntimeError' } } });
    } finally {
      await agentServer.stop();
    }
  });
});
