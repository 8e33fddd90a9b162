// Upgrading an installation of the versions before deployments had databases of their own: started on
// their data, this version serves every deployment's old assistants, threads (state and history), runs,
// crons and store items from the deployment's own database, nothing lost, and the platform's database
// keeps none of them. Two deployments, as those versions left them:
//   - a local one (`serve`'s) whose rows sat in the platform's shared tables: moved into its own
//     database when the platform starts (platform/services/deployments/shared-agent-rows.ts);
//   - one with a database of its own made by those versions (a deployed revision's was, with the
//     platform's whole chain in it and a made-up organization and workspace): converted by its agent
//     server's first migration when it starts (src/agent-server/prisma/migrations).
// The rows are a committed fixture that the version of commit a0cda12 made (test/fixtures/upgrade/),
// loaded into databases migrated as those versions migrated them (test/support/earlier-version.ts):
// building that version's own data directory here would mean installing it (minutes, and the registry).
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { Client } from '@langchain/langgraph-sdk';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createSecretBox } from '../../../../src/crypto.js';
import { bossConnection, RUN_QUEUE_OPTIONS } from '../../../../src/queues.js';
import { openAdminLogin } from '../../../../src/database/admin-login.js';
import { CHECKPOINT_SCHEMA } from '../../../../src/database/checkpoint-schema.js';
import { ensureStoreSchema, storeSchema } from '../../../../src/database/store-schema.js';
import { namespaceOf } from '../../../../src/agent-server/services/store/store-items.store.js';
import { deploymentDatabaseName, deploymentDatabaseUrl, runtimeLoginRole } from '../../../../src/platform/services/deployments/deployment-database.js';
import { type RunningPlatform, startPlatform } from '../../../../src/start.js';
import { SYSTEM_VIEWER } from '../../../../src/viewer.js';
import { createDeps } from '../../../../src/wiring.js';
import { migrateAsEarlierVersions } from '../../../support/earlier-version.js';
import { buildTenant } from '../../../support/factories.js';
import { databaseUrl, testConfig } from '../../../support/helpers.js';
import { fixtureConfig, removeDir } from '../../../support/serve.js';

const FIXTURE = new URL('../../../fixtures/upgrade/earlier-version-rows.sql', import.meta.url).pathname;
/** The fixture's deployment (serve's, whose rows sat in the platform's tables). */
const SHARED = '43da157c-3913-516b-80ea-d8b0455e0a25';
/** A deployment whose database those versions made, holding the same rows under its own id. */
const OWN = randomUUID();

const logins = inject('databaseLogins');
const earlierName = `${new URL(databaseUrl()).pathname.slice(1)}_earlier`;
const earlierUrl = (() => {
  const url = new URL(databaseUrl());
  url.pathname = `/${earlierName}`;
  return url.toString();
})();
const config = testConfig({
  DATABASE_URL: earlierUrl,
  AGENT_PLATFORM_ROLES: 'api,worker,runtime',
  AGENT_PLATFORM_RUNTIME_DEPLOYMENTS: `${SHARED},${OWN}`,
  AGENT_PLATFORM_INGEST_THREADS: '0',
});
const secrets = createSecretBox(config.secretKey!);
const project = fixtureConfig();

/** The fixture's rows for `deploymentId` (its id and store schema in place of the fixture's). */
const fixtureRows = (deploymentId: string) =>
  readFileSync(FIXTURE, 'utf8').replaceAll(SHARED, deploymentId).replaceAll(storeSchema(SHARED), storeSchema(deploymentId));

async function onDatabase<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * LangGraph's checkpoint tables and the deployment's store schema, as those versions made them, then
 * its rows, and what those versions' job queue held of them (in the database the rows are in): its
 * pending run's job, due when the fixture's was (an hour after it was made, so still ahead), and its
 * cron's schedule.
 */
async function loadRows(url: string, deploymentId: string): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    await new PostgresSaver(pool, undefined, { schema: CHECKPOINT_SCHEMA }).setup();
    await ensureStoreSchema({ pool, url }, deploymentId);
    await pool.query(fixtureRows(deploymentId));
  } finally {
    await pool.end();
  }
  const boss = new PgBoss({ ...bossConnection(url), supervise: false, schedule: false });
  await boss.start();
  try {
    const queue = `runs.execute.${deploymentId}`;
    await boss.createQueue(queue, RUN_QUEUE_OPTIONS);
    await boss.createQueue('crons.fire', { policy: 'standard' });
    await onDatabase(url, async (client) => {
      const { rows: pending } = await client.query("SELECT id, thread_id, job_id FROM agent_runs WHERE deployment_id = $1 AND status = 'pending'", [deploymentId]);
      for (const run of pending) await boss.send(queue, { runId: run.id, threadId: run.thread_id }, { id: run.job_id, singletonKey: run.thread_id, startAfter: 3600 });
      const { rows: crons } = await client.query('SELECT id, schedule, timezone FROM agent_crons WHERE deployment_id = $1', [deploymentId]);
      for (const cron of crons) await boss.schedule('crons.fire', cron.schedule, { cronId: cron.id }, { tz: cron.timezone, key: cron.id });
    });
  } finally {
    await boss.stop({ graceful: false, close: true });
  }
}

type Expected = {
  threads: { id: string; status: string; values: unknown; checkpoints: number }[];
  runs: { id: string; thread_id: string; status: string }[];
  items: { namespace_path: string; key: string; value: unknown }[];
  cron: string;
  assistant: string;
};

/** What the fixture holds, read back from an earlier version's database. */
async function expectedOf(client: pg.Client, deploymentId: string): Promise<Expected> {
  const threads = await client.query(
    `SELECT t.id, t.status, t.values, (SELECT count(*)::int FROM langgraph.checkpoints c WHERE c.thread_id = t.id::text AND c.checkpoint_ns = '') AS checkpoints
       FROM agent_threads t WHERE t.deployment_id = $1 ORDER BY t.id`,
    [deploymentId],
  );
  const runs = await client.query('SELECT id, thread_id, status FROM agent_runs WHERE deployment_id = $1 ORDER BY id', [deploymentId]);
  const items = await client.query(`SELECT namespace_path, key, value FROM "${storeSchema(deploymentId)}".store ORDER BY namespace_path, key`);
  const cron = await client.query('SELECT id FROM agent_crons WHERE deployment_id = $1', [deploymentId]);
  const assistant = await client.query(`SELECT id FROM agent_assistants WHERE deployment_id = $1 AND metadata->>'fixture' = 'upgrade'`, [deploymentId]);
  return { threads: threads.rows, runs: runs.rows, items: items.rows, cron: cron.rows[0].id, assistant: assistant.rows[0].id };
}

let platform: RunningPlatform;
let adminKey: string;
const expected: Record<string, Expected> = {};

beforeAll(async () => {
  // The platform's database as those versions left it: their migrations, a tenant, two deployments.
  await onDatabase(inject('adminDatabaseUrl'), async (admin) => {
    await admin.query(`CREATE DATABASE ${earlierName}${logins.owner ? ` OWNER ${logins.owner}` : ''}`);
    await admin.query(`REVOKE CONNECT, TEMPORARY ON DATABASE ${earlierName} FROM PUBLIC`);
    for (const login of new Set([logins.platform, logins.admin].map((url) => new URL(url).username))) await admin.query(`GRANT CONNECT ON DATABASE ${earlierName} TO ${login}`);
  });
  await migrateAsEarlierVersions(earlierUrl);
  const earlier = await createDeps(config, pino({ level: 'silent' }), { databaseUrl: earlierUrl, listen: false });
  let workspaceId: string;
  let organizationId: string;
  try {
    const tenant = await buildTenant({ ...earlier.deps, viewer: SYSTEM_VIEWER });
    ({ adminKey } = tenant);
    workspaceId = tenant.workspace.id;
    organizationId = tenant.organization.id;
  } finally {
    await earlier.stop();
  }
  const graphIds = ['agent', 'interrupt', 'nested', 'failing', 'slow', 'factory', 'memory'];
  await onDatabase(earlierUrl, async (client) => {
    for (const id of [SHARED, OWN]) {
      await client.query(
        `INSERT INTO deployments (id, tenant_id, name, source, source_config, graph_ids, updated_at) VALUES ($1, $2, $3, 'local', $4, $5, now())`,
        [id, workspaceId, id === SHARED ? 'shared' : 'own', { config_path: project.configPath }, graphIds],
      );
    }
  });
  await loadRows(earlierUrl, SHARED);
  expected[SHARED] = await onDatabase(earlierUrl, (client) => expectedOf(client, SHARED));

  // The other's database, made by those versions for a login of its own: their migrations there too,
  // a made-up organization and workspace, its deployment's row, and its rows.
  const adminLogin = openAdminLogin(config.adminDatabaseUrl!);
  try {
    const password = secrets.derive(`database-login:${OWN}`).key.toString('hex');
    await adminLogin.ensureLogin(runtimeLoginRole(OWN), password, { connections: -1, tempFileKb: 1024 * 1024 });
    await adminLogin.ensureDatabase(deploymentDatabaseName(OWN), runtimeLoginRole(OWN), -1);
  } finally {
    await adminLogin.close();
  }
  const ownUrl = deploymentDatabaseUrl(earlierUrl, secrets, OWN);
  await migrateAsEarlierVersions(ownUrl);
  await onDatabase(ownUrl, async (client) => {
    await client.query(`INSERT INTO organizations (id, name, updated_at) VALUES ($1, 'Deployment organization', now())`, [organizationId]);
    await client.query(`INSERT INTO workspaces (id, organization_id, name, updated_at) VALUES ($1, $2, 'Deployment workspace', now())`, [workspaceId, organizationId]);
    await client.query(
      `INSERT INTO deployments (id, tenant_id, name, source, source_config, graph_ids, updated_at) VALUES ($1, $2, 'own', 'local', $3, $4, now())`,
      [OWN, workspaceId, { config_path: project.configPath }, graphIds],
    );
  });
  await loadRows(ownUrl, OWN);
  expected[OWN] = await onDatabase(ownUrl, (client) => expectedOf(client, OWN));

  // This version starts on them: the platform and both deployments' agent servers (the runtime role).
  platform = await startPlatform(config, pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }));
}, 180_000);

afterAll(async () => {
  await platform?.stop();
  await onDatabase(inject('adminDatabaseUrl'), (admin) => admin.query(`DROP DATABASE IF EXISTS ${earlierName} WITH (FORCE)`)).catch(() => undefined);
  removeDir(project.dir);
});

describe('upgrading from a version before deployments had databases of their own', () => {
  it("keeps nothing of the agent server's in the platform's database", async () => {
    await onDatabase(earlierUrl, async (client) => {
      const { rows } = await client.query(
        `SELECT (SELECT count(*)::int FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relname IN ('agent_assistants', 'agent_assistant_versions', 'agent_threads', 'agent_runs', 'run_events', 'agent_crons')) AS tables,
                (SELECT count(*)::int FROM pg_namespace WHERE nspname = 'langgraph' OR nspname LIKE 'langgraph\\_store\\_%') AS schemas`,
      );
      expect(rows[0]).toEqual({ tables: 0, schemas: 0 });
    });
  });

  for (const [which, deploymentId] of [
    ['moved out of the platform’s tables', SHARED],
    ['in a database an earlier version made', OWN],
  ] as const) {
    describe(`a deployment whose rows were ${which}`, () => {
      const client = () => new Client({ apiUrl: `${platform.url}/deployments/${deploymentId}`, apiKey: adminKey, callerOptions: { maxRetries: 0 } });

      it('serves its threads with their state and history, their runs, its assistant, cron and store items', async () => {
        const sdk = client();
        const { threads, runs, items, cron, assistant } = expected[deploymentId]!;
        expect(threads.length).toBeGreaterThanOrEqual(3);
        const found = await sdk.threads.search({ metadata: { fixture: 'upgrade' }, limit: 10 });
        expect(found.map((thread) => thread.thread_id).sort()).toEqual(threads.map((thread) => thread.id));
        for (const thread of threads) {
          expect((await sdk.threads.get(thread.id)).status).toBe(thread.status);
          // Read by its runtime from the checkpoints: the values the thread's row cached.
          expect((await sdk.threads.getState(thread.id)).values).toEqual(thread.values);
          expect(await sdk.threads.getHistory(thread.id, { limit: 100 })).toHaveLength(thread.checkpoints);
        }
        const listed = (await Promise.all(threads.map((thread) => sdk.runs.list(thread.id, { limit: 100 })))).flat();
        expect(listed.map((run) => [run.run_id, run.thread_id, run.status]).sort()).toEqual(runs.map((run) => [run.id, run.thread_id, run.status]).sort());
        expect((await sdk.assistants.getVersions(assistant)).map((version) => version.version).sort()).toEqual([1, 2]);
        expect((await sdk.crons.search({ limit: 10 })).map((found) => found.cron_id)).toEqual([cron]);
        for (const item of items) {
          expect((await sdk.store.getItem(namespaceOf(item), item.key))?.value).toEqual(item.value);
        }
      });

      it('gives its pending run a job due when its old one was, and its cron a schedule, in its own queue', async () => {
        const { runs, cron } = expected[deploymentId]!;
        const pending = runs.find((run) => run.status === 'pending')!;
        await onDatabase(deploymentDatabaseUrl(earlierUrl, secrets, deploymentId), async (own) => {
          const { rows: jobs } = await own.query(
            `SELECT j.start_after > now() + interval '30 minutes' AS later FROM agent_runs r JOIN pgboss.job j ON j.id::text = r.job_id WHERE r.id = $1`,
            [pending.id],
          );
          expect(jobs).toEqual([{ later: true }]);
          const { rows: schedules } = await own.query(`SELECT key FROM pgboss.schedule WHERE name = 'crons.fire'`);
          expect(schedules).toEqual([{ key: cron }]);
          // Its own tables only: the platform's are not in its database.
          const { rows: tables } = await own.query("SELECT to_regclass('deployments') AS platform, (SELECT count(*)::int FROM served_deployments) AS own");
          expect(tables).toEqual([{ platform: null, own: 1 }]);
        });
      });

      it('resumes its thread waiting on an interrupt, from the checkpoint an earlier version wrote', async () => {
        const sdk = client();
        const thread = expected[deploymentId]!.threads.find((candidate) => candidate.status === 'interrupted')!;
        const before = await sdk.threads.getHistory(thread.id, { limit: 100 });
        expect((await sdk.threads.getState(thread.id)).next).toEqual(['ask']);
        const state = await sdk.runs.wait(thread.id, 'interrupt', { command: { resume: 'yes' } });
        expect(state).toEqual({ ...(thread.values as object), answer: 'yes', done: true });
        expect((await sdk.threads.get(thread.id)).status).toBe('idle');
        expect((await sdk.threads.getHistory(thread.id, { limit: 100 })).length).toBeGreaterThan(before.length);
      });
    });
  }
});
