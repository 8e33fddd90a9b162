// The run path folds pg-boss's own statements into its own (the job insert with the run row, the fetch
// with the run's claim, the completion with its outcome), captured through pg-boss's `db` option. When a
// pg-boss upgrade changes their shape, the run path quietly falls back to separate round trips; this
// test makes that loud instead.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runQueueFor } from '../../../../src/agent-server/services/runs/run-queue.js';
import { startTestPlatform, type TestPlatform } from '../../../support/helpers.js';

let platform: TestPlatform;
beforeAll(async () => {
  platform = await startTestPlatform();
});
afterAll(async () => {
  await platform?.stop();
});

it("captures pg-boss's job insert, fetch and completion in the shapes the run path folds into its statements", async () => {
  const queue = runQueueFor(platform.boss!, crypto.randomUUID());
  const jobId = crypto.randomUUID();
  const insert = await queue.jobInsert({ runId: crypto.randomUUID(), threadId: crypto.randomUUID(), stateful: false, jobId });
  expect(insert?.text).toMatch(/^INSERT\b/i);
  const fetch = await queue.fetchStatement(4);
  expect(fetch?.ctes).toMatch(/^WITH\b/i);
  expect(fetch?.update).toMatch(/^UPDATE\b[\s\S]*\bRETURNING\b/i);
  const completion = await queue.completionUpdate(jobId);
  expect(completion?.update).toMatch(/^UPDATE\b/i);
  // Capturing touched nothing: no job was inserted.
  const { rows } = await platform.deps.db.pool.query('SELECT count(*)::int AS n FROM pgboss.job WHERE id = $1', [jobId]);
  expect(rows).toEqual([{ n: 0 }]);
});
