// The worker role's queues are `notify` queues (agent-server/jobs/boss.ts): a sent job wakes its worker at once
// and workers poll only every 30 s as a backstop, so an idle installation does not poll every 2 s per
// worker. These pin that a job does not wait for that backstop, nor does a failed job's retry.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Boss } from '../../src/queues.js';
import { startPlatformJobs } from '../../src/platform/jobs/platform-jobs.js';
import { workNotified } from '../../src/queues.js';
import { startTestPlatform, type TestPlatform } from '../support/helpers.js';

let platform: TestPlatform;
let worker: Boss;

beforeAll(async () => {
  platform = await startTestPlatform();
  // A worker role's job queue (LISTEN/NOTIFY on) next to the platform's, which only sends.
  worker = await startPlatformJobs(platform.deps, { work: true });
});
afterAll(async () => {
  await worker?.stop({ graceful: false, close: true });
  await platform?.stop();
});

const settle = () => new Promise((resolve) => setTimeout(resolve, 500));

describe('notify queues', () => {
  it('declares the worker role’s queues with notify on', async () => {
    const queue = await platform.boss!.getQueue('usage.fold');
    expect(queue?.notify).toBe(true);
  });

  it('works a job sent by another process at once, not at the 30 s backstop poll', async () => {
    const name = 'test.notify-send';
    await worker.createQueue(name, { notify: true, retryLimit: 0 });
    const worked: number[] = [];
    await workNotified(worker, { name, notify: true, retryLimit: 0 }, async () => void worked.push(Date.now()));
    await settle(); // the worker's first fetch found nothing: its next poll is 30 s away
    const sentAt = Date.now();
    await platform.boss!.send(name, {});
    await expect.poll(() => worked.length, { timeout: 10_000, interval: 50 }).toBe(1);
    expect(worked[0]! - sentAt).toBeLessThan(10_000);
  });

  it('retries a failed job when its retry delay is over, not at the backstop poll', async () => {
    const name = 'test.notify-retry';
    const queue = { name, notify: true, retryLimit: 1, retryDelay: 1 };
    await worker.createQueue(name, queue);
    const attempts: number[] = [];
    await workNotified(worker, queue, async () => {
      attempts.push(Date.now());
      if (attempts.length === 1) throw new Error('first attempt fails');
    });
    await settle();
    await platform.boss!.send(name, {});
    await expect.poll(() => attempts.length, { timeout: 12_000, interval: 50 }).toBe(2);
    expect(attempts[1]! - attempts[0]!).toBeGreaterThanOrEqual(1000);
    expect(attempts[1]! - attempts[0]!).toBeLessThan(12_000);
  });
});
