// An operator backs up a running installation (`admin backup`), loses its data directory, restores the
// backup into an empty one (`admin restore`) and starts the platform again: the deployment serves its
// old threads, its store and its runs; traces, usage and the export read as before; what happened
// after the backup is not there. Everything is read through the APIs users have, before and after.
import { randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, lchownSync, lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { Client as LangSmith } from 'langsmith';
import { afterAll, describe, expect, it } from 'vitest';
import { echoGraph, makeGitRepo } from '../../support/deployments.js';
import { startS3 } from '../../support/exports.js';
import { graphql } from '../../support/helpers.js';
import { type PlatformProcess, runCli, spawnPlatform } from '../../support/processes.js';

const scratch = mkdtempSync(join(tmpdir(), 'agent-platform-backup-'));
// Traversable, as a data directory's parents must be for PostgreSQL's and the deployments' OS users.
chmodSync(scratch, 0o755);
const dataDir = join(scratch, 'data');
const backupDir = join(scratch, 'backup');
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// The embedded database in `dataDir`, nothing of the test run's own database configuration.
const env: Record<string, string | undefined> = {
  DATABASE_URL: undefined,
  AGENT_PLATFORM_ADMIN_DATABASE_URL: undefined,
  AGENT_PLATFORM_SECRET_KEY: undefined,
  AGENT_PLATFORM_DATA_DIR: dataDir,
};
const start = () => spawnPlatform(['start', '--port', '0'], env, 180_000);
const admin = async (...args: string[]) => {
  const result = await runCli(['admin', ...args], env);
  if (result.code !== 0) throw new Error(`admin ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return result.stdout;
};

/** Everything the installation's users can read of what the test made, through their APIs. */
async function observe(url: string, key: string, ids: { deploymentId: string; threadId: string; exportId: string; workspaceId: string; traceId: string }) {
  const agent = new Client({ apiUrl: `${url}/deployments/${ids.deploymentId}`, defaultHeaders: { 'x-api-key': key } });
  const langsmith = new LangSmith({ apiUrl: url, apiKey: key });
  const trace = [];
  for await (const run of langsmith.listRuns({ projectName: 'backed-up', traceId: ids.traceId })) trace.push(run);
  const rest = async (path: string) => {
    const response = await fetch(`${url}${path}`, { headers: { 'x-api-key': key, 'x-tenant-id': ids.workspaceId } });
    expect(response.status, path).toBe(200);
    return response.json();
  };
  const exported = (await rest(`/api/v1/bulk-exports/${ids.exportId}`)) as Record<string, unknown>;
  return {
    threads: (await agent.threads.search({ limit: 100 })).map((thread) => thread.thread_id).sort(),
    state: (await agent.threads.getState(ids.threadId)).values,
    history: (await agent.threads.getHistory(ids.threadId)).length,
    runs: (await agent.runs.list(ids.threadId)).map((run) => [run.run_id, run.status]),
    item: (await agent.store.getItem(['notes'], 'kept'))?.value,
    trace: trace.map((run) => [run.id, run.name, run.inputs, run.outputs, run.end_time]).sort(),
    exported: { status: exported.status, runs: ((await rest(`/api/v1/bulk-exports/${ids.exportId}/runs`)) as unknown[]).length },
  };
}

describe('admin backup and restore', () => {
  it('brings back a wiped installation as it was at the backup: deployment, threads, store, traces, export', async () => {
    const s3 = await startS3();
    let platform: PlatformProcess | undefined = await start();
    try {
      const key = /^API key: (\S+)$/m.exec(platform.output())![1]!;
      const { body } = await graphql(platform.url, '{ viewer { workspaces { id } } }', { key });
      const workspaceId: string = body.data.viewer.workspaces[0].id;

      const deployed = await runCli(['deploy', makeGitRepo(echoGraph('v1')).dir, '--name', 'kept', '--wait'], { AGENT_PLATFORM_URL: platform.url, AGENT_PLATFORM_API_KEY: key, AGENT_PLATFORM_TENANT_ID: workspaceId });
      expect(deployed.stdout).toContain('DEPLOYED');
      const deploymentId = /^Deployment (\S+) /m.exec(deployed.stdout)![1]!;
      const agent = new Client({ apiUrl: `${platform.url}/deployments/${deploymentId}`, defaultHeaders: { 'x-api-key': key } });
      const thread = await agent.threads.create();
      await agent.runs.wait(thread.thread_id, 'agent', { input: { input: 'remember me' } });
      await agent.store.putItem(['notes'], 'kept', { text: 'in the store' });

      const langsmith = new LangSmith({ apiUrl: platform.url, apiKey: key });
      const traceId = randomUUID();
      const startTime = Date.now();
      await langsmith.createRun({ id: traceId, trace_id: traceId, dotted_order: `${new Date(startTime).toISOString().replace(/[-:.]/g, '')}${traceId}`, name: 'kept-trace', run_type: 'chain', inputs: { question: 'q' }, project_name: 'backed-up', start_time: startTime });
      await langsmith.updateRun(traceId, { outputs: { answer: 'a' }, end_time: startTime + 5, trace_id: traceId, dotted_order: `${new Date(startTime).toISOString().replace(/[-:.]/g, '')}${traceId}` });
      await langsmith.awaitPendingTraceBatches();
      const project = await langsmith.readProject({ projectName: 'backed-up' });

      const call = async (method: string, path: string, payload: unknown) => {
        const response = await fetch(`${platform!.url}/api/v1${path}`, { method, headers: { 'x-api-key': key, 'x-tenant-id': workspaceId, 'content-type': 'application/json' }, body: JSON.stringify(payload) });
        const json = (await response.json()) as any;
        expect(response.status, JSON.stringify(json)).toBe(200);
        return json;
      };
      await s3.createBucket('backups-test');
      const destination = await call('POST', '/bulk-exports/destinations', {
        destination_type: 's3',
        display_name: 'Lake',
        config: { bucket_name: 'backups-test', prefix: 'runs', endpoint_url: s3.endpoint, region: 'us-east-1' },
        credentials: { access_key_id: 'S3RVER', secret_access_key: 'S3RVER' },
      });
      const created = await call('POST', '/bulk-exports', { bulk_export_destination_id: destination.id, session_id: project.id, start_time: new Date(startTime - 3_600_000).toISOString(), end_time: new Date(startTime + 3_600_000).toISOString() });
      const ids = { deploymentId, threadId: thread.thread_id, exportId: created.id as string, workspaceId, traceId };

      // The export runs in the platform's worker; the trace is visible once ingested.
      await expect.poll(async () => (await observe(platform!.url, key, ids)).exported.status, { timeout: 60_000, interval: 500 }).toBe('Completed');
      await expect.poll(async () => (await observe(platform!.url, key, ids)).trace.length, { timeout: 20_000, interval: 200 }).toBe(1);
      const before = await observe(platform.url, key, ids);
      expect(before).toMatchObject({ state: { reply: 'v1: remember me' }, item: { text: 'in the store' }, runs: [[expect.any(String), 'success']] });

      // What deployed code may leave in its home for a backup made as root to follow: a link to a
      // file only root reads, and a FIFO that would hang a reader. (Made here as its OS user would.)
      const home = join(dataDir, 'deployments', deploymentId, 'home');
      const owner = lstatSync(home).uid;
      symlinkSync('/etc/shadow', join(home, 'stolen'));
      execFileSync('mkfifo', [join(home, 'pipe')]);
      for (const name of ['stolen', 'pipe']) lchownSync(join(home, name), owner, owner);

      // Backed up while it runs and serves.
      const backupOutput = await admin('backup', backupDir);
      expect(backupOutput).toMatch(/^database agent_platform: [\d.]+ MB$/m);
      expect(backupOutput).toContain(`database agent_deployment_${deploymentId.replaceAll('-', '')}`);
      expect(backupOutput).toMatch(/^files of deployments\/[\w-]+$/m);
      expect(backupOutput).toMatch(/^backup complete in [\d.]+ s/m);

      // Each deployment's files were archived as its own OS user, who reads no secret of the host's.
      const manifest = JSON.parse(readFileSync(join(backupDir, 'agent-platform-backup.json'), 'utf8'));
      const homes = manifest.folders.flatMap((folder: any) => folder.owned.filter((owned: any) => owned.name === 'home'));
      expect(homes).toEqual([expect.objectContaining({ uid: owner })]);
      const shadow = process.getuid?.() === 0 ? readFileSync('/etc/shadow', 'utf8').split('\n')[0]! : 'never in a backup made without root';
      for (const file of readdirSync(join(backupDir, 'files'))) expect(readFileSync(join(backupDir, 'files', file), 'latin1')).not.toContain(shadow);

      // After the backup: a thread the restore must not bring back.
      const later = await agent.threads.create();

      // Lost: the platform stops and its data directory is gone.
      expect(await platform.stop()).toBe(0);
      platform = undefined;
      rmSync(dataDir, { recursive: true, force: true });

      // A backup is restored only into an empty data directory, and only when it is complete.
      const restoreOutput = await admin('restore', backupDir);
      expect(restoreOutput).toMatch(/^database agent_platform: restored$/m);
      expect(restoreOutput).toMatch(/^restore complete in [\d.]+ s/m);
      const again = await runCli(['admin', 'restore', backupDir], env);
      expect(again).toMatchObject({ code: 1, stderr: expect.stringContaining('already holds a database') });

      platform = await start();
      // The deployment's agent server starts from the restored build; until then its gateway answers 503.
      await expect.poll(async () => (await fetch(`${platform!.url}/deployments/${deploymentId}/ok`, { headers: { 'x-api-key': key } })).status, { timeout: 120_000, interval: 500 }).toBe(200);
      // The link came back as a link, its own user's; the FIFO as a FIFO.
      expect(readlinkSync(join(home, 'stolen'))).toBe('/etc/shadow');
      expect(lstatSync(join(home, 'stolen')).uid).toBe(owner);
      expect(lstatSync(join(home, 'pipe')).isFIFO()).toBe(true);
      const after = await observe(platform.url, key, ids);
      expect(after).toEqual(before);
      expect(after.threads).not.toContain(later.thread_id);
      // The restored deployment still runs its graph and writes to its restored database.
      expect(await new Client({ apiUrl: `${platform.url}/deployments/${deploymentId}`, defaultHeaders: { 'x-api-key': key } }).runs.wait(thread.thread_id, 'agent', { input: { input: 'again' } })).toMatchObject({ reply: 'v1: again' });
    } finally {
      await platform?.stop();
      await s3.stop();
    }
  }, 600_000);

  it('refuses an unfinished backup, and a backup into a folder that is not empty', async () => {
    const unfinished = mkdtempSync(join(scratch, 'unfinished-'));
    const restore = await runCli(['admin', 'restore', unfinished], { ...env, AGENT_PLATFORM_DATA_DIR: join(scratch, 'never') });
    expect(restore).toMatchObject({ code: 1, stderr: expect.stringContaining('not a backup, or one that did not finish') });
    expect(existsSync(join(scratch, 'never', 'postgres'))).toBe(false);

    const used = mkdtempSync(join(scratch, 'used-'));
    writeFileSync(join(used, 'notes.txt'), 'something of the operator\'s');
    const backup = await runCli(['admin', 'backup', used], env);
    expect(backup).toMatchObject({ code: 1, stderr: expect.stringContaining('is not empty') });
  });
});
