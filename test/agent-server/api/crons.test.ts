// Crons through the official SDK's `client.crons` against a real `serve` process. pg-boss ticks once a
// minute, so firing is driven with a test clock through fireCron, the service function each cron's
// pg-boss schedule calls; two more workers of the deployment (startWorker), with their own pools and job queues on its database.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fireCron } from '../../../src/agent-server/services/crons/crons.service.js';
import { removeDir, startServe, startWorker, type ServeProcess } from '../../support/serve.js';

let server: ServeProcess;
let workerA: Awaited<ReturnType<typeof startWorker>>;
let workerB: Awaited<ReturnType<typeof startWorker>>;
let pool: pg.Pool;
beforeAll(async () => {
  // Room for a loaded machine: serve loads the runtime and the fixture graphs before it answers.
  server = await startServe({ readyTimeoutMs: 170_000 });
  [workerA, workerB] = await Promise.all([startWorker(server), startWorker(server)]);
  pool = new pg.Pool({ connectionString: server.databaseUrl, max: 2 });
}, 240_000);
// Connections to the server's database end first: a deployed revision's goes with it.
afterAll(async () => {
  await Promise.all([workerA?.stop(), workerB?.stop()]);
  await pool?.end();
  await server?.stop();
  removeDir(server?.dir);
});

// Once a year: the serve process's own pg-boss clock never fires these during the test.
const YEARLY = '0 0 1 1 *';

/** The pg-boss schedule of a cron (keyed by its id), if it has one. */
const bossSchedule = async (cronId: string) => {
  const { rows } = await pool.query<{ cron: string; timezone: string }>(`SELECT cron, timezone FROM pgboss.schedule WHERE name = 'crons.fire' AND key = $1`, [cronId]);
  return rows[0];
};

const raw = (method: string, path: string, body?: unknown) =>
  fetch(`${server.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });

describe('crons', () => {
  it('a thread cron fires a run on its thread, once per tick even when two workers are handed the tick', async () => {
    const thread = await server.client.threads.create();
    const cron = await server.client.crons.createForThread(thread.thread_id, 'nested', { schedule: YEARLY, input: {}, metadata: { purpose: 'test' } });
    expect(cron).toMatchObject({ thread_id: thread.thread_id, schedule: YEARLY });
    expect(await bossSchedule(cron.cron_id)).toEqual({ cron: YEARLY, timezone: 'UTC' });
    const due = new Date(cron.next_run_date);
    expect(due.getUTCMonth()).toBe(0);

    const fired = await Promise.all([fireCron(workerA.deps, cron.cron_id, due), fireCron(workerB.deps, cron.cron_id, due)]);
    const runs = fired.filter((run) => run !== undefined);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ threadId: thread.thread_id, metadata: { purpose: 'test', cron_id: cron.cron_id } });
    // The same tick again (a late duplicate) makes no run.
    expect(await fireCron(workerA.deps, cron.cron_id, due)).toBeUndefined();

    // A cron's run is a normal run: the runs API lists it and the runtime executes it.
    const listed = await server.client.runs.list(thread.thread_id);
    expect(listed.map((run) => run.run_id)).toEqual([runs[0]!.runId]);
    expect(await server.client.runs.join(thread.thread_id, runs[0]!.runId)).toMatchObject({ trail: expect.arrayContaining(['parent']) });

    // The next occurrence is a year on, and fires its own run.
    const [after] = await server.client.crons.search({ threadId: thread.thread_id });
    const next = new Date(after!.next_run_date!);
    expect(next.getUTCFullYear()).toBe(due.getUTCFullYear() + 1);
    expect(await fireCron(workerB.deps, cron.cron_id, next)).toMatchObject({ threadId: thread.thread_id });
    expect(await server.client.runs.list(thread.thread_id)).toHaveLength(2);
  });

  it('a stateless cron runs on a new thread each time', async () => {
    const cron = await server.client.crons.create('nested', { schedule: YEARLY, input: {}, onRunCompleted: 'keep' });
    expect(cron.thread_id).toBeNull();
    const first = await fireCron(workerA.deps, cron.cron_id, new Date(cron.next_run_date));
    const [after] = await server.client.crons.search({ assistantId: cron.assistant_id, threadId: undefined, limit: 100 }).then((crons) => crons.filter((c) => c.cron_id === cron.cron_id));
    const second = await fireCron(workerA.deps, cron.cron_id, new Date(after!.next_run_date!));
    expect(first && second).toBeTruthy();
    expect(first!.threadId).not.toBe(second!.threadId);
    for (const run of [first!, second!]) {
      expect((await server.client.runs.get(run.threadId, run.runId)).metadata).toMatchObject({ cron_id: cron.cron_id });
    }
  });

  it('stops at end_time: its schedule is removed and later ticks make no run', async () => {
    const thread = await server.client.threads.create();
    const first = new Date(Date.UTC(new Date().getUTCFullYear() + 1, 0, 1));
    const cron = await server.client.crons.createForThread(thread.thread_id, 'nested', { schedule: YEARLY, input: {} });
    // Ends a day after its next occurrence: that one fires, none after.
    const updated = await server.client.crons.update(cron.cron_id, { endTime: new Date(first.getTime() + 86_400_000).toISOString() });
    expect(updated.next_run_date).toBe(first.toISOString());
    expect(await fireCron(workerA.deps, cron.cron_id, first)).toBeDefined();
    const [ended] = await server.client.crons.search({ threadId: thread.thread_id });
    expect(ended!.next_run_date).toBeNull();
    expect(await bossSchedule(cron.cron_id)).toBeUndefined();
    expect(await fireCron(workerA.deps, cron.cron_id, new Date(first.getTime() + 366 * 86_400_000))).toBeUndefined();
    expect(await server.client.runs.list(thread.thread_id)).toHaveLength(1);

    // An end_time already past stops a cron at once.
    const other = await server.client.crons.createForThread(thread.thread_id, 'nested', { schedule: YEARLY, input: {} });
    await server.client.crons.update(other.cron_id, { endTime: new Date(Date.now() - 1000).toISOString() });
    expect(await bossSchedule(other.cron_id)).toBeUndefined();
    expect(await fireCron(workerA.deps, other.cron_id, first)).toBeUndefined();
  });

  it('disabling removes its schedule and stops it firing; enabling brings both back', async () => {
    // The SDK's create sends no timezone; the API takes one.
    const created = await raw('POST', '/runs/crons', { assistant_id: 'nested', schedule: '30 6 * * 1', timezone: 'Europe/Paris', input: {} });
    expect(created.status).toBe(200);
    const cron = (await created.json()) as { cron_id: string; next_run_date: string };
    expect(cron).toMatchObject({ timezone: 'Europe/Paris', enabled: true });
    expect(await bossSchedule(cron.cron_id)).toEqual({ cron: '30 6 * * 1', timezone: 'Europe/Paris' });
    await server.client.crons.update(cron.cron_id, { enabled: false });
    expect(await bossSchedule(cron.cron_id)).toBeUndefined();
    expect(await fireCron(workerA.deps, cron.cron_id, new Date(cron.next_run_date))).toBeUndefined();
    const enabled = await server.client.crons.update(cron.cron_id, { enabled: true, schedule: '0 7 * * 1' });
    expect(enabled).toMatchObject({ enabled: true, schedule: '0 7 * * 1' });
    expect(await bossSchedule(cron.cron_id)).toEqual({ cron: '0 7 * * 1', timezone: 'Europe/Paris' });
    await server.client.crons.delete(cron.cron_id);
    expect(await bossSchedule(cron.cron_id)).toBeUndefined();
  });

  it('updates sent at once leave its schedule as its row ends: there while enabled, gone while disabled', async () => {
    const cron = await server.client.crons.create('nested', { schedule: YEARLY, input: {} });
    for (let round = 0; round < 6; round++) {
      await Promise.all([
        server.client.crons.update(cron.cron_id, { enabled: false }),
        server.client.crons.update(cron.cron_id, { enabled: true, schedule: `0 ${round} 1 1 *` }),
        server.client.crons.update(cron.cron_id, { enabled: false }),
        server.client.crons.update(cron.cron_id, { enabled: true, schedule: `0 ${round} 2 1 *` }),
      ]);
      const { rows } = await pool.query<{ enabled: boolean; schedule: string }>('SELECT enabled, schedule FROM agent_crons WHERE id = $1', [cron.cron_id]);
      expect(await bossSchedule(cron.cron_id)).toEqual(rows[0]!.enabled ? { cron: rows[0]!.schedule, timezone: 'UTC' } : undefined);
    }
    await server.client.crons.delete(cron.cron_id);
  });

  it('searches, counts and deletes', async () => {
    const thread = await server.client.threads.create();
    const a = await server.client.crons.createForThread(thread.thread_id, 'nested', { schedule: YEARLY, input: {} });
    const b = await server.client.crons.createForThread(thread.thread_id, 'agent', { schedule: YEARLY, input: {}, enabled: false });
    expect(await server.client.crons.count({ threadId: thread.thread_id })).toBe(2);
    expect(await server.client.crons.count({ threadId: thread.thread_id, assistantId: 'agent' })).toBe(1);
    expect((await server.client.crons.search({ threadId: thread.thread_id, enabled: false })).map((c) => c.cron_id)).toEqual([b.cron_id]);
    expect((await server.client.crons.search({ threadId: thread.thread_id, sortBy: 'created_at', sortOrder: 'asc' })).map((c) => c.cron_id)).toEqual([a.cron_id, b.cron_id]);
    const selected = await server.client.crons.search({ threadId: thread.thread_id, select: ['cron_id', 'schedule'], limit: 1 });
    expect(Object.keys(selected[0]!).sort()).toEqual(['cron_id', 'schedule']);
    await server.client.crons.delete(a.cron_id);
    expect(await server.client.crons.count({ threadId: thread.thread_id })).toBe(1);
    await expect(server.client.crons.delete(a.cron_id)).rejects.toThrow(/HTTP 404/);
  });

  it('deleting a thread deletes its crons and their schedules', async () => {
    const thread = await server.client.threads.create();
    const cron = await server.client.crons.createForThread(thread.thread_id, 'nested', { schedule: YEARLY, input: {} });
    expect(await bossSchedule(cron.cron_id)).toBeDefined();
    await server.client.threads.delete(thread.thread_id);
    expect(await server.client.crons.count({ threadId: thread.thread_id })).toBe(0);
    expect(await bossSchedule(cron.cron_id)).toBeUndefined();
  });
});

async function gql(query: string, variables: Record<string, unknown> = {}) {
  const response = await fetch(`${server.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, variables }) });
  const body = (await response.json()) as { data?: any; errors?: unknown[] };
  expect(body.errors).toBeUndefined();
  return body.data;
}

describe('crons on pg-boss’s own clock', () => {
  // The real path, once: pg-boss's cron clock (a minute's grain; a pass each second in tests, see
  // AGENT_PLATFORM_CRON_CLOCK_SECONDS) sends the tick, and two worker processes (the serve process and
  // a second one here) both work the crons.fire queue.
  it('fires a `* * * * *` cron on its thread, one run per tick with two workers', async () => {
    const secondWorker = await startWorker(server, { jobs: true });
    try {
      const thread = await server.client.threads.create();
      const cron = await server.client.crons.createForThread(thread.thread_id, 'nested', { schedule: '* * * * *', input: {} });
      let runs: Awaited<ReturnType<typeof server.client.runs.list>> = [];
      const deadline = Date.now() + 90_000;
      while (!runs.length && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        runs = await server.client.runs.list(thread.thread_id);
      }
      expect(runs).toHaveLength(1);
      // A duplicate of the same tick would come from a later pass of either worker's clock: five passes
      // of each (a pass each second) give it every chance.
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      const minutes = (await server.client.runs.list(thread.thread_id)).map((run) => run.created_at.slice(0, 16));
      expect(new Set(minutes).size).toBe(minutes.length);
      expect(runs[0]!.metadata).toMatchObject({ cron_id: cron.cron_id });
      await server.client.crons.delete(cron.cron_id);
    } finally {
      await secondWorker.stop();
    }
  }, 120_000);
});

describe('crons in GraphQL', () => {
  it('creates, reads, lists, counts, updates and deletes the crons the SDK sees', async () => {
    const thread = await server.client.threads.create();
    const created = await gql(
      `mutation($input: CreateCronInput!) { createCron(input: $input) { ... on MutationCreateCronSuccess { data { cronId threadId schedule enabled nextRunDate } } ... on AppError { code message } } }`,
      { input: { deploymentId: server.deploymentId, assistantId: 'nested', threadId: thread.thread_id, schedule: YEARLY, input: {} } },
    );
    const cron = created.createCron.data;
    expect(cron).toMatchObject({ threadId: thread.thread_id, schedule: YEARLY, enabled: true });
    expect((await server.client.crons.search({ threadId: thread.thread_id })).map((c) => c.cron_id)).toEqual([cron.cronId]);
    const read = await gql(
      `query($d: ID!, $id: ID!, $t: ID!) { cron(deploymentId: $d, id: $id) { ... on QueryCronSuccess { data { cronId } } } crons(deploymentId: $d, threadId: $t) { cronId } cronCount(deploymentId: $d, threadId: $t) }`,
      { d: server.deploymentId, id: cron.cronId, t: thread.thread_id },
    );
    expect(read).toEqual({ cron: { data: { cronId: cron.cronId } }, crons: [{ cronId: cron.cronId }], cronCount: 1 });
    const updated = await gql(
      `mutation($input: UpdateCronInput!) { updateCron(input: $input) { ... on MutationUpdateCronSuccess { data { enabled } } } }`,
      { input: { deploymentId: server.deploymentId, cronId: cron.cronId, enabled: false } },
    );
    expect(updated.updateCron.data).toEqual({ enabled: false });
    expect(await bossSchedule(cron.cronId)).toBeUndefined();
    const garbage = await gql(
      `mutation($input: CreateCronInput!) { createCron(input: $input) { ... on AppError { code message } } }`,
      { input: { deploymentId: server.deploymentId, assistantId: 'nested', schedule: 'garbage' } },
    );
    expect(garbage.createCron).toMatchObject({ code: 'VALIDATION_FAILED', message: expect.stringMatching(/schedule/) });
    await gql(`mutation($d: ID!, $id: ID!) { deleteCron(deploymentId: $d, id: $id) { ... on MutationDeleteCronSuccess { data } } }`, { d: server.deploymentId, id: cron.cronId });
    expect(await server.client.crons.count({ threadId: thread.thread_id })).toBe(0);
  });
});

describe('crons bad input', () => {
  it('answers 4xx with a clear message on every route', async () => {
    const thread = await server.client.threads.create();
    const cases: [string, string, unknown, number, RegExp][] = [
      ['POST', '/runs/crons', { assistant_id: 'nested', schedule: 'every tuesday' }, 422, /schedule/],
      ['POST', '/runs/crons', { assistant_id: 'nested', schedule: '* * * * * *' }, 422, /more than once a minute/],
      ['POST', '/runs/crons', { assistant_id: 'nested', schedule: '61 * * * *' }, 422, /schedule/],
      ['POST', '/runs/crons', { assistant_id: 'nested', schedule: '0 * * * *', timezone: 'Mars/Olympus' }, 422, /time zone/],
      ['POST', '/runs/crons', { assistant_id: 'nested', schedule: '0 * * * *', end_time: 'tomorrow' }, 422, /end_time/],
      ['POST', '/runs/crons', { assistant_id: 'nested' }, 422, /schedule/],
      ['POST', '/runs/crons', { assistant_id: 'nested', schedule: '0 * * * *', webhook: 'http://169.254.169.254/latest/meta-data' }, 422, /body\.webhook/],
      ['POST', '/runs/crons', { assistant_id: 'no-such-graph', schedule: '0 * * * *' }, 404, /not found/],
      ['POST', `/threads/${crypto.randomUUID()}/runs/crons`, { assistant_id: 'nested', schedule: '0 * * * *' }, 404, /Thread/],
      ['POST', `/threads/${thread.thread_id}/runs/crons`, { assistant_id: 'nested', schedule: '*/0 * * * *' }, 422, /schedule/],
      ['POST', '/runs/crons/search', { limit: 0 }, 422, /limit/],
      ['POST', '/runs/crons/search', { sort_by: 'nonsense' }, 422, /sort_by/],
      ['POST', '/runs/crons/count', { thread_id: 'not-a-uuid' }, 422, /thread_id/],
      ['PATCH', `/runs/crons/${crypto.randomUUID()}`, { enabled: false }, 404, /Cron not found/],
      ['PATCH', '/runs/crons/not-a-uuid', { enabled: false }, 404, /Cron not found/],
      ['DELETE', `/runs/crons/${crypto.randomUUID()}`, undefined, 404, /Cron not found/],
    ];
    for (const [method, path, body, status, message] of cases) {
      const response = await raw(method, path, body);
      expect(response.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(status);
      expect(await response.text()).toMatch(message);
    }
    const cron = await server.client.crons.create('nested', { schedule: YEARLY, input: {} });
    const patch = await raw('PATCH', `/runs/crons/${cron.cron_id}`, { schedule: '*/10 * * * * *' });
    expect(patch.status).toBe(422);
    expect(await bossSchedule(cron.cron_id)).toEqual({ cron: YEARLY, timezone: 'UTC' });
    await server.client.crons.delete(cron.cron_id);
  });

  it('reports crons in /info', async () => {
    const info = (await (await raw('GET', '/info')).json()) as { flags: Record<string, boolean> };
    expect(info.flags).toMatchObject({ crons: true, store: true });
  });
});
