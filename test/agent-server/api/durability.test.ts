// A runtime killed mid-run (kill -9) loses no run: the next runtime for the deployment sees that the
// dead process's liveness lock is gone, puts the run back in the queue and executes it again from the
// thread's latest checkpoint (the steps that had finished are not run again; a stateless run, which
// keeps none, starts over); a client's stream resumes with Last-Event-ID and sees the run end, and the
// thread's next run waits for it. A run whose runtime dies at every attempt is given up as `error`
// after a bounded number of them. And a runtime that only looked dead (its liveness lock lost with its
// connection) stops its own execution of a run a sweep put back in the queue: the run runs once.
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { runtimeLockKey } from '../../../src/contracts/launcher-protocol.js';
import { requeueRun } from '../../../src/agent-server/runtime/recovery.js';
import { selectRunningRuns } from '../../../src/agent-server/services/runs/runs.store.js';
import { removeDir, startServe, startWorker, type ServeProcess } from '../../support/serve.js';

const servers: ServeProcess[] = [];
afterAll(async () => {
  for (const server of servers) await server.stop();
  for (const server of servers) removeDir(server.dir);
});

/** Resolves once the server's process has exited (at once if it has). */
async function exited(server: ServeProcess): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  await new Promise((resolve) => server.child.once('exit', resolve));
}

/** Starts the server again on its deployment (its folder kept), in place of the dead one. */
async function restart(server: ServeProcess): Promise<ServeProcess> {
  const next = await server.restart();
  next.dir = server.dir;
  servers.splice(servers.indexOf(server), 1, next);
  return next;
}

describe('a runtime killed mid-run', () => {
  it('has its run executed again from its last checkpoint on the restarted runtime; the resumed stream sees its end', async () => {
    let server = await startServe();
    servers.push(server);
    const thread = await server.client.threads.create();
    const run = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'doomed', delay_ms: 2_000 }, streamMode: ['custom'] });
    const queued = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'next', delay_ms: 1 } });
    // A stateless run under way too: it keeps no checkpoint, and starts over.
    const stateless = await server.client.runs.create(null, 'slow', { input: { label: 'stateless', delay_ms: 2_000 }, streamMode: ['values'] });
    const before: { id?: string; event: string; data: unknown }[] = [];
    for await (const part of server.client.runs.joinStream(thread.thread_id, run.run_id)) {
      before.push(part);
      if (part.event === 'custom' && (part.data as { step: string }).step === 'second') break;
    }
    // The step `first` is in the thread's checkpoint (written alongside `second`'s start).
    for (;;) {
      const state = await server.client.threads.getState<{ log?: string[] }>(thread.thread_id);
      if (state.values.log?.includes('doomed:first')) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect((await server.client.runs.get(thread.thread_id, run.run_id)).status).toBe('running');

    server.child.kill('SIGKILL');
    await exited(server);
    const killedAt = Date.now();
    server = await restart(server);
    console.log(`restarted within ${Date.now() - killedAt} ms of the kill`);

    const lastEventId = before.at(-1)!.id!;
    const after: { id?: string; event: string; data: unknown }[] = [];
    for await (const part of server.client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId })) after.push(part);
    // Every event id once, in order, across both connections.
    const ids = [...before, ...after].map((part) => Number(part.id));
    expect(ids.every((id, index) => index === 0 || id > ids[index - 1]!)).toBe(true);
    // The second attempt announced itself, and started at the step that was cut short.
    const metadata = after.filter((part) => part.event === 'metadata').map((part) => part.data as { attempt: number });
    expect(metadata).toEqual([expect.objectContaining({ attempt: 2 })]);
    expect(after.filter((part) => part.event === 'custom').map((part) => (part.data as { step: string }).step)).toEqual(['second', 'third']);
    expect(after.some((part) => part.event === 'error')).toBe(false);

    expect((await server.client.runs.get(thread.thread_id, run.run_id)).status).toBe('success');
    expect(((await server.client.runs.join(thread.thread_id, run.run_id)) as { log: string[] }).log).toEqual(['doomed:first', 'doomed:second', 'doomed:third']);
    const next = (await server.client.runs.join(thread.thread_id, queued.run_id)) as { log: string[] };
    expect(next.log).toEqual(['doomed:first', 'doomed:second', 'doomed:third', 'next:first', 'next:second', 'next:third']);
    expect((await server.client.runs.get(thread.thread_id, queued.run_id)).status).toBe('success');
    expect(await server.client.runs.list(thread.thread_id, { status: 'running' })).toEqual([]);

    const statelessParts: { event: string; data: unknown }[] = [];
    for await (const part of server.client.runs.joinStream(null, stateless.run_id)) statelessParts.push(part);
    expect(statelessParts.filter((part) => part.event === 'metadata').map((part) => (part.data as { attempt: number }).attempt)).toEqual([1, 2]);
    expect(statelessParts.at(-1)).toMatchObject({ event: 'values', data: { log: ['stateless:first', 'stateless:second', 'stateless:third'] } });
  }, 120_000);

  it('gives a run up as error once its runtime died at each of its attempts (AGENT_SERVER_RUN_MAX_ATTEMPTS, 2 here), and the thread moves on', async () => {
    let server = await startServe({ env: { AGENT_SERVER_RUN_MAX_ATTEMPTS: '2' } });
    servers.push(server);
    const thread = await server.client.threads.create();
    // `first` kills its process at every attempt, after a wait long enough for a restart to be ready.
    const run = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'crashing', delay_ms: 3_000, crash_in: 'first' } });
    const queued = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'next', delay_ms: 1, crash_in: 'none' } });
    let restarts = 0;
    for (;;) {
      await exited(server);
      server = await restart(server);
      restarts++;
      if ((await server.client.runs.get(thread.thread_id, run.run_id)).status === 'error') break;
      expect(restarts).toBeLessThan(2);
    }
    expect(restarts).toBe(2);
    const result = (await server.client.runs.join(thread.thread_id, run.run_id)) as { __error__: { error: string; message: string } };
    expect(result.__error__).toMatchObject({ error: 'RuntimeError', message: expect.stringContaining('2 attempts') });
    const next = (await server.client.runs.join(thread.thread_id, queued.run_id)) as { log: string[] };
    expect(next.log).toEqual(['next:first', 'next:second', 'next:third']);
    expect((await server.client.runs.get(thread.thread_id, queued.run_id)).status).toBe('success');
  }, 180_000);

  it('a runtime cut from the database while a sweep put its run back in the queue stops its own execution: the run is executed once more, not twice', async () => {
    const server = await startServe();
    servers.push(server);
    const worker = await startWorker(server);
    const locker = new pg.Client({ connectionString: server.databaseUrl });
    await locker.connect();
    try {
      const thread = await server.client.threads.create();
      const run = await server.client.runs.create(thread.thread_id, 'slow', { input: { label: 'once', delay_ms: 1_500 } });
      await expect.poll(async () => (await server.client.runs.get(thread.thread_id, run.run_id)).status, { timeout: 10_000, interval: 50 }).toBe('running');
      const [running] = await selectRunningRuns(worker.deps.db, {});
      // The runtime's liveness lock is lost (its connection ends, as in a database outage) and, before
      // it takes it again, a sweep sees it free and puts the run back in the queue.
      // The session holding it (wherever the process keeps it: today its event bus's connection) ends.
      const { rows: ended } = await locker.query(
        `SELECT pg_terminate_backend(l.pid) AS ended FROM pg_locks l
          WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtext($1)::bigint`,
        [runtimeLockKey(running!.worker_id)],
      );
      expect(ended).toEqual([{ ended: true }]);
      await locker.query('SELECT pg_advisory_lock(hashtext($1))', [runtimeLockKey(running!.worker_id)]);
      expect(await requeueRun(worker.deps, worker.deps.boss!, running!, running!.job_id!, 'test: its runtime looked dead')).toBe(true);
      await locker.query('SELECT pg_advisory_unlock(hashtext($1))', [runtimeLockKey(running!.worker_id)]);

      const result = (await server.client.runs.join(thread.thread_id, run.run_id)) as { log: string[] };
      expect(result.log).toEqual(['once:first', 'once:second', 'once:third']);
      expect((await server.client.runs.get(thread.thread_id, run.run_id)).status).toBe('success');
      const parts: { event: string; data: unknown }[] = [];
      for await (const part of server.client.runs.joinStream(thread.thread_id, run.run_id)) parts.push(part);
      expect(parts.filter((part) => part.event === 'metadata').map((part) => (part.data as { attempt: number }).attempt)).toEqual([1, 2]);
      expect(parts.some((part) => part.event === 'error')).toBe(false);
      // Nothing of the stopped execution lands later.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect((await server.client.threads.getState<{ log: string[] }>(thread.thread_id)).values.log).toEqual(['once:first', 'once:second', 'once:third']);
      expect((await server.client.runs.get(thread.thread_id, run.run_id)).status).toBe('success');
      // Each step ran to its checkpoint once: two executions would have left two branches of them.
      const history = await server.client.threads.getHistory<{ log?: string[] }>(thread.thread_id, { limit: 100 });
      const steps = history.map((state) => (state.values.log ?? []).join(',')).filter(Boolean).sort();
      expect(steps).toEqual(['once:first', 'once:first,once:second', 'once:first,once:second,once:third']);
      expect(server.output()).not.toContain('could not store run events');
    } finally {
      await locker.end();
      await worker.stop();
    }
  }, 120_000);
});
