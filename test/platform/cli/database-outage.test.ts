// A database outage under each kind of process, real ones on a PostgreSQL of the test's own that it
// stops and starts again: `serve`, `start` (the platform's api and worker roles) and a deployed
// revision's agent server, reached through the platform's gateway. While the database is away each
// lives on and answers not ready (503); within seconds of its return each serves again by itself, no
// restart: the same key, new runs, a stream open across the outage ends, a new deploy, and what a
// sweep would forget of an agent server that looks dead (its row and liveness lock) is back.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtimeLockKey } from '../../../src/contracts/launcher-protocol.js';
import { deploymentDatabaseName } from '../../../src/platform/services/deployments/deployment-database.js';
import { echoGraph, makeGitRepo } from '../../support/deployments.js';
import { graphql } from '../../support/helpers.js';
import { type PlatformProcess, runCli, spawnPlatform } from '../../support/processes.js';
import { fixtureConfig } from '../../support/serve.js';
import { startStoppablePostgres, type StoppablePostgres } from '../../support/stoppable-postgres.js';

// How long the database stays away: long enough for every pool, listener and lock to notice.
const DOWN_MS = 8_000;
// "Within seconds": what a process may take to answer 200 again once the database answers.
const RECOVERY_BOUND_MS = 15_000;

let postgres: StoppablePostgres;
const dataDir = mkdtempSync(join(tmpdir(), 'agent-platform-database-outage-'));
const secretKey = randomBytes(32).toString('base64');

beforeAll(async () => {
  postgres = await startStoppablePostgres();
}, 120_000);
afterAll(async () => {
  await postgres?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** What the test measured, printed once at the end: how long after the database's return each process answered 200 again, and served its first run. */
const recoveries: Record<string, number> = {};
afterAll(() => console.log(`recovery after the database's return (ms): ${JSON.stringify(recoveries)}`));

const statusOf = async (url: string, headers: Record<string, string> = {}): Promise<number | string> =>
  fetch(url, { headers, signal: AbortSignal.timeout(5_000) }).then(
    (response) => response.status,
    (error: Error & { cause?: { code?: string } }) => error.cause?.code ?? error.message,
  );

/**
 * Stops PostgreSQL for DOWN_MS under `processes`, checking that `health` answers 503 (and they live)
 * meanwhile, starts it again and waits for `health` to answer 200; records how long that took under
 * `name` and returns when the database came back.
 */
async function outage(name: string, health: () => Promise<number | string>, processes: PlatformProcess[]): Promise<number> {
  await postgres.stop();
  const down = Date.now();
  const seen = new Set<number | string>();
  while (Date.now() - down < DOWN_MS) {
    seen.add(await health());
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  for (const process of processes) expect(process.child.exitCode, process.output().slice(-3000)).toBe(null);
  expect([...seen], processes.map((p) => p.output().slice(-6000)).join('\n')).toEqual([503]);

  await postgres.start();
  const back = Date.now();
  await expect.poll(health, { timeout: RECOVERY_BOUND_MS, interval: 100 }).toBe(200);
  recoveries[`${name} /ok`] = Date.now() - back;
  return back;
}

/** Whether an agent server's records are held live: its rows in `table` at `url` and their liveness locks (a free lock is a dead server's, which a sweep forgets). */
async function heldLive(url: string, table: 'deployment_runtimes' | 'runtimes', deploymentId: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string }>(`SELECT id FROM ${table} WHERE deployment_id = $1`, [deploymentId]);
    if (!rows.length) return false;
    for (const { id } of rows) {
      const { rows: lock } = await client.query<{ free: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS free', [runtimeLockKey(id)]);
      if (lock[0]!.free) return false;
    }
    return true;
  } finally {
    await client.end();
  }
}

/** The URL of a deployment's own database on the test's server (its agent server's tables). */
const deploymentDatabase = (deploymentId: string) => postgres.url(deploymentDatabaseName(deploymentId));

describe('a database outage', () => {
  it('serve: answers 503 while PostgreSQL is away, then serves again by itself (new runs, a stream open across it ends)', async () => {
    const databaseUrl = await postgres.createDatabase('serve');
    const { configPath, dir } = fixtureConfig();
    const serve = await spawnPlatform(['serve', '--config', configPath, '--port', '0'], { DATABASE_URL: databaseUrl, AGENT_PLATFORM_SECRET_KEY: secretKey, AGENT_PLATFORM_DATA_DIR: dataDir }, 120_000, /Agent server .* running at (http:\/\/\S+)/);
    try {
      const deploymentId = /deployment (\S+)\) running at/.exec(serve.output())![1]!;
      const client = new Client({ apiUrl: serve.url });
      const thread = await client.threads.create();
      expect(await client.runs.wait(thread.thread_id, 'slow', { input: { label: 'before', delay_ms: 10 } })).toMatchObject({ log: ['before:first', 'before:second', 'before:third'] });
      // A run under way when the database goes, followed by a stream.
      const across = await client.threads.create();
      const run = await client.runs.create(across.thread_id, 'slow', { input: { label: 'across', delay_ms: 1_000 } });
      const streamed = (async () => {
        for await (const _ of client.runs.joinStream(across.thread_id, run.run_id)) void _;
      })();

      const back = await outage('serve', () => statusOf(`${serve.url}/ok`), [serve]);

      const after = await client.threads.create();
      expect(await client.runs.wait(after.thread_id, 'slow', { input: { label: 'after', delay_ms: 10 } })).toMatchObject({ log: ['after:first', 'after:second', 'after:third'] });
      recoveries['serve run'] = Date.now() - back;
      // The stream open across the outage ends (its run ended, one way or the other).
      expect(await Promise.race([streamed.then(() => 'ended'), new Promise((resolve) => setTimeout(resolve, 20_000, 'still open'))]), serve.output().slice(-8000)).toBe('ended');
      recoveries['serve stream open across it ended'] = Date.now() - back;
      // Its records as the platform's and its own sweeps see them: alive, not to be forgotten.
      await expect.poll(() => heldLive(databaseUrl, 'deployment_runtimes', deploymentId), { timeout: 5_000 }).toBe(true);
      await expect.poll(() => heldLive(deploymentDatabase(deploymentId), 'runtimes', deploymentId), { timeout: 5_000 }).toBe(true);
    } finally {
      expect(await serve.stop()).toBe(0);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);

  it("serve: a run's result, its thread's values and its checkpoints survive PostgreSQL crashing the moment the run answered", async () => {
    // Checkpoints commit without waiting for the disk (run-checkpointer.ts): the run's outcome, committed
    // after them and waited for, must take them to the disk before any client hears the run ended.
    const databaseUrl = await postgres.createDatabase('crash');
    const { configPath, dir } = fixtureConfig();
    const serve = await spawnPlatform(['serve', '--config', configPath, '--port', '0'], { DATABASE_URL: databaseUrl, AGENT_PLATFORM_SECRET_KEY: secretKey, AGENT_PLATFORM_DATA_DIR: dataDir }, 120_000, /Agent server .* running at (http:\/\/\S+)/);
    try {
      const client = new Client({ apiUrl: serve.url, callerOptions: { maxRetries: 0 } });
      const runs: { thread: string; run: string; label: string }[] = [];
      // A run that asked its checkpoints to wait for the disk, then one that did not, answered immediately before the crash.
      for (const durability of ['sync', 'async'] as const) {
        const thread = await client.threads.create();
        const label = `crash-${durability}`;
        const run = await client.runs.create(thread.thread_id, 'slow', { input: { label, delay_ms: 10 }, durability });
        await client.runs.join(thread.thread_id, run.run_id);
        runs.push({ thread: thread.thread_id, run: run.run_id, label });
      }
      await postgres.crash();
      await postgres.start();
      await expect.poll(() => statusOf(`${serve.url}/ok`), { timeout: RECOVERY_BOUND_MS, interval: 100 }).toBe(200);

      for (const { thread, run, label } of runs) {
        expect((await client.runs.get(thread, run)).status).toBe('success');
        const log = [`${label}:first`, `${label}:second`, `${label}:third`];
        expect((await client.threads.getState(thread)).values).toMatchObject({ log });
        expect((await client.threads.get(thread)).values).toMatchObject({ log });
        // Every step's checkpoint: the input, then one after each of the three nodes.
        expect((await client.threads.getHistory(thread)).map((state) => state.metadata?.step)).toEqual([3, 2, 1, 0, -1]);
      }
    } finally {
      expect(await serve.stop()).toBe(0);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);

  describe('start (the platform) and a revision it deployed', () => {
    let platform: PlatformProcess;
    let key = '';
    let workspaceId = '';
    let deploymentId = '';
    let databaseUrl = '';
    const deploy = async (name: string) => {
      const repo = makeGitRepo(echoGraph(name));
      const deployed = await runCli(['deploy', repo.dir, '--name', name, '--wait'], { AGENT_PLATFORM_URL: platform.url, AGENT_PLATFORM_API_KEY: key, AGENT_PLATFORM_TENANT_ID: workspaceId });
      expect(deployed.stdout, `${deployed.stderr}\n${platform.output().slice(-6000)}`).toContain('DEPLOYED');
      return /^Deployment (\S+) /m.exec(deployed.stdout)![1]!;
    };
    const ask = (id: string, input: string) =>
      new Client({ apiUrl: `${platform.url}/deployments/${id}`, defaultHeaders: { 'x-api-key': key } }).runs.wait(null, 'agent', { input: { input } });

    beforeAll(async () => {
      databaseUrl = await postgres.createDatabase('platform');
      platform = await spawnPlatform(['start', '--port', '0', '--data-dir', join(dataDir, 'platform')], { DATABASE_URL: databaseUrl, AGENT_PLATFORM_SECRET_KEY: secretKey }, 120_000);
      key = /^API key: (\S+)$/m.exec(platform.output())![1]!;
      const { body } = await graphql(platform.url, '{ viewer { workspaces { id } } }', { key });
      workspaceId = body.data.viewer.workspaces[0].id;
      deploymentId = await deploy('before');
    }, 240_000);
    afterAll(async () => {
      expect(await platform?.stop()).toBe(0);
    });

    // One outage under both (each answering for itself): the platform's /ok and, through its gateway,
    // the deployed revision's agent server's.
    it("the platform and a deployed revision's agent server: 503 while PostgreSQL is away, then each serves and works again by itself (the same key, its runs, a new deploy)", async () => {
      const platformHealth = () => statusOf(`${platform.url}/ok`);
      const deployedHealth = () => statusOf(`${platform.url}/deployments/${deploymentId}/ok`, { 'x-api-key': key });
      expect(await deployedHealth()).toBe(200);
      // Both at once: one status while they agree, both named while they do not.
      const health = async () => {
        const [own, deployed] = await Promise.all([platformHealth(), deployedHealth()]);
        return own === deployed ? own : `platform ${own}, deployed ${deployed}`;
      };
      const back = await outage('start and deployed', health, [platform]);

      const { status, body } = await graphql(platform.url, '{ viewer { workspaces { id } } }', { key });
      expect(status).toBe(200);
      expect(body.data.viewer.workspaces[0].id).toBe(workspaceId);
      expect(await ask(deploymentId, 'again')).toMatchObject({ reply: 'before: again' });
      recoveries['deployed run'] = Date.now() - back;
      // Where the gateway finds it, and its runtime in its own database: held live again.
      await expect.poll(() => heldLive(databaseUrl, 'deployment_runtimes', deploymentId), { timeout: 5_000 }).toBe(true);
      await expect.poll(() => heldLive(deploymentDatabase(deploymentId), 'runtimes', deploymentId), { timeout: 5_000 }).toBe(true);
      // The worker role builds and deploys again.
      const after = await deploy('after');
      expect(await ask(after, 'hello')).toMatchObject({ reply: 'after: hello' });
    }, 300_000);
  });
});
