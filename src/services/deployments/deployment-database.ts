// The database side of a deployment's runtime, done by the platform: a runtime's login may only read
// and write, so everything that needs DDL (LangGraph's checkpoint tables, the deployment's store schema
// and its settings, the run queue) is set up here before the runtime starts, and the login is granted
// exactly what a runtime uses. Grants are made in one place (`grantRuntimeLogin`) and re-applied at
// every launch, so tables that appeared since (a new store schema, a pg-boss upgrade) are covered.
//
// What a runtime's login may not touch: tenancy (organizations, workspaces, users, memberships), API
// keys, other columns of `deployments` (its sealed secrets among them), revisions and their logs,
// OAuth providers, integrations, listeners, export destinations and runs, usage and trace tables (a
// deployed runtime traces nothing yet), and any other deployment's store schema. Rows of the
// agent-server tables (threads, runs, assistants, their events) are limited to its own deployment by
// row-level security (`runtime_own_deployment` policies, see the migration `runtime_login_rls`), and
// the checkpoint tables to its own threads (`runtime_own_threads`, limitCheckpointsToOwnThreads).
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { type Database, withTransaction } from '../../db.js';
import type { Deps } from '../context.js';
import { recordThreadTtl } from './deployments.store.js';
import { runQueueFor } from '../runs/run-queue.js';
import { runQueueName } from '../runs/run-queue-name.js';
import { ensureStoreTables, type StoreSettings, storeSchema, writeStoreSettings } from '../store/store-items.store.js';
import { CHECKPOINT_SCHEMA } from '../threads/checkpoints.store.js';
import type { GraphConfig } from '../../graph-config.js';

const SETUP_LOCK = 'agent-platform:langgraph-setup';
const GRANT_LOCK = 'agent-platform:runtime-grants';

/** The database login of a deployment's runtimes: one per deployment, made by the launcher. */
export const runtimeLoginRole = (deploymentId: string) => `agent_runtime_${deploymentId.replace(/-/g, '')}`;

let checkpointTables: Promise<void> | undefined;

/** LangGraph's checkpoint tables (schema `langgraph`), created once per process under the set-up lock. */
function ensureCheckpointTables(db: Pick<Database, 'pool'>): Promise<void> {
  checkpointTables ??= (async () => {
    const client = await db.pool.connect();
    try {
      // Concurrent first starts race on CREATE SCHEMA/TABLE; the advisory lock serialises them.
      await client.query('SELECT pg_advisory_lock(hashtext($1))', [SETUP_LOCK]);
      await new PostgresSaver(db.pool, undefined, { schema: CHECKPOINT_SCHEMA }).setup();
      await limitCheckpointsToOwnThreads(client);
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [SETUP_LOCK]).catch(() => undefined);
      client.release();
    }
  })().catch((error: unknown) => {
    checkpointTables = undefined;
    throw error;
  });
  return checkpointTables;
}

// LangGraph's tables holding thread state, shared by every deployment (keyed by thread id).
const CHECKPOINT_TABLES = ['checkpoints', 'checkpoint_blobs', 'checkpoint_writes'];
const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

/**
 * Row-level security on the checkpoint tables, as on the agent-server tables: a deployed runtime's
 * login reads and writes only checkpoints of threads it can see, which `agent_threads`' own policy
 * limits to its deployment. Without it, deployed code could read (and delete) every other
 * deployment's thread state. The platform's login owns these tables and is not subject to it; a
 * runtime pays one primary-key probe of `agent_threads` per checkpoint row. Created once (policies
 * already there are left as they are, so a start takes no lock on tables runtimes are writing).
 */
async function limitCheckpointsToOwnThreads(client: pg.PoolClient): Promise<void> {
  const { rows } = await client.query<{ table: string }>(
    `SELECT c.relname AS table FROM pg_class c
      WHERE c.relnamespace = $1::regnamespace AND c.relname = ANY($2::text[])
        AND NOT EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid AND p.polname = 'runtime_own_threads')`,
    [CHECKPOINT_SCHEMA, CHECKPOINT_TABLES],
  );
  for (const { table } of rows) {
    const qualified = `${CHECKPOINT_SCHEMA}."${table}"`;
    await client.query(`ALTER TABLE ${qualified} ENABLE ROW LEVEL SECURITY`);
    // thread_id is text: anything that is not a UUID names no thread (rather than failing the cast).
    await client.query(
      `CREATE POLICY runtime_own_threads ON ${qualified}
         USING (EXISTS (SELECT 1 FROM public.agent_threads t WHERE t.id = CASE WHEN thread_id ~ '${UUID_PATTERN}' THEN thread_id::uuid END))`,
    );
  }
}

/**
 * Everything of a deployment's persistence that needs DDL, from its graph config (read as JSON; no
 * deployment code runs here): the checkpoint tables, its store schema, the store's settings (the
 * embeddings table shaped to `store.index.dims`), the threads' default TTL (on the deployment's row,
 * where the sweep reads it) and, when the job queue is given, its run queue. Idempotent. Returns the
 * store's settings as recorded.
 */
export async function setUpDeploymentDatabase(
  db: Database,
  deploymentId: string,
  config: Pick<GraphConfig, 'store' | 'threadTtl'>,
  boss?: PgBoss,
): Promise<StoreSettings> {
  await ensureCheckpointTables(db);
  await ensureStoreTables(db, deploymentId);
  const { index, ttl } = config.store ?? {};
  const settings = await writeStoreSettings(db, deploymentId, {
    // The runtime loads the embedding function `index.embed` names, and fails to start without it.
    index: index ? { dims: index.dims, fields: index.fields ?? ['$'] } : null,
    ttl: ttl ? { defaultTtlMinutes: ttl.default_ttl ?? null, refreshOnRead: ttl.refresh_on_read ?? null, sweepIntervalMinutes: ttl.sweep_interval_minutes ?? null } : null,
  });
  await recordThreadTtl(db, deploymentId, config.threadTtl);
  if (boss) await runQueueFor(boss, deploymentId).ensure();
  return settings;
}

// The agent-server tables a runtime reads and writes (rows limited to its deployment by RLS).
const AGENT_SERVER_TABLES = ['agent_threads', 'agent_runs', 'run_events', 'agent_assistants', 'agent_assistant_versions'];
// Columns of `deployments` a runtime reads: never `secrets`.
const DEPLOYMENT_COLUMNS = ['id', 'tenant_id', 'name', 'graph_ids', 'active_revision_id', 'deleted_at', 'thread_default_ttl_minutes'];

/**
 * Grants a deployment's runtime login what a runtime uses, as the owner of the tables (the platform's
 * login); the admin login made the role and took away its memberships and settings
 * (AdminLogin.ensureLogin). Idempotent; serialised across processes, since concurrent GRANTs on one
 * object fail with "tuple concurrently updated".
 */
export async function grantRuntimeLogin(db: Pick<Database, 'pool'>, deploymentId: string): Promise<void> {
  const role = `"${runtimeLoginRole(deploymentId)}"`;
  const store = `"${storeSchema(deploymentId)}"`;
  await withTransaction(db, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [GRANT_LOCK]);
    await client.query(`GRANT USAGE ON SCHEMA public, ${CHECKPOINT_SCHEMA}, ${store}, pgboss TO ${role}`);
    await client.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ${AGENT_SERVER_TABLES.join(', ')} TO ${role}`);
    await client.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON deployment_runtimes TO ${role}`);
    await client.query(`GRANT SELECT (${DEPLOYMENT_COLUMNS.join(', ')}) ON deployments TO ${role}`);
    // Checkpoints: the thread-state tables (rows limited by limitCheckpointsToOwnThreads), and the
    // saver's migration record read-only. What an earlier launch granted on that schema is taken back first.
    await client.query(`REVOKE ALL ON ALL TABLES IN SCHEMA ${CHECKPOINT_SCHEMA} FROM ${role}`);
    await client.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ${CHECKPOINT_TABLES.map((table) => `${CHECKPOINT_SCHEMA}."${table}"`).join(', ')} TO ${role}`);
    await client.query(`GRANT SELECT ON ${CHECKPOINT_SCHEMA}.checkpoint_migrations TO ${role}`);
    await client.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${store} TO ${role}`);
    // Large event payloads: a runtime publishes some and reads those it is notified of; it changes
    // and deletes none (the platform prunes them).
    await client.query(`REVOKE ALL ON event_payloads FROM ${role}`);
    await client.query(`GRANT SELECT, INSERT ON event_payloads TO ${role}`);
    // pg-boss: the table run queues live in (unpartitioned queues share `job_common`), its rows limited
    // to the deployment's own run queue, and what its fetch and complete read; not the job tables'
    // parent, other queues' partitions, schedules or subscriptions. Earlier launches' grants on those go.
    const { rows: jobTables } = await client.query<{ name: string }>(
      `SELECT quote_ident(relname) AS name FROM pg_class WHERE relnamespace = 'pgboss'::regnamespace AND relkind IN ('r', 'p') AND (relname IN ('job', 'job_common', 'archive') OR relname ~ '^j[0-9a-f]{56}$')`,
    );
    if (jobTables.length) await client.query(`REVOKE ALL ON ${jobTables.map(({ name }) => `pgboss.${name}`).join(', ')} FROM ${role}`);
    await limitRunJobsToOwnQueue(client);
    await client.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON pgboss.${COMMON_JOB_TABLE} TO ${role}`);
    await client.query(`GRANT SELECT ON pgboss.queue, pgboss.version TO ${role}`);
    // The sequences behind the granted tables' serial columns.
    const { rows: sequences } = await client.query<{ name: string }>(
      `SELECT DISTINCT s.oid::regclass::text AS name
         FROM pg_class s JOIN pg_depend d ON d.objid = s.oid AND d.classid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
        WHERE s.relkind = 'S' AND d.refobjid IN (
          SELECT c.oid FROM pg_class c
           WHERE c.oid = ANY($1::regclass[]) OR c.relnamespace IN ($2::regnamespace, $3::regnamespace, 'pgboss'::regnamespace))`,
      [[...AGENT_SERVER_TABLES, 'deployment_runtimes', 'event_payloads'], CHECKPOINT_SCHEMA, storeSchema(deploymentId)],
    );
    if (sequences.length) await client.query(`GRANT USAGE, SELECT ON SEQUENCE ${sequences.map(({ name }) => name).join(', ')} TO ${role}`);
  });
}

// pg-boss's table of unpartitioned queues' jobs (every run queue's, and the platform's own queues').
const COMMON_JOB_TABLE = 'job_common';

/**
 * Row-level security on pg-boss's common job table: a deployed runtime's login sees and changes only
 * the jobs of its own deployment's run queue, so deployed code can neither drop another deployment's
 * runs nor send jobs to the platform's queues (builds, exports). pg-boss itself runs on the platform's
 * login, which owns the table and is not subject to it. Created once, inside grantRuntimeLogin's
 * transaction and lock.
 */
async function limitRunJobsToOwnQueue(client: pg.PoolClient): Promise<void> {
  const { rows } = await client.query(
    `SELECT 1 FROM pg_class c WHERE c.oid = to_regclass($1)
        AND NOT EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid AND p.polname = 'runtime_own_queue')`,
    [`pgboss.${COMMON_JOB_TABLE}`],
  );
  if (!rows.length) return;
  await client.query(`ALTER TABLE pgboss.${COMMON_JOB_TABLE} ENABLE ROW LEVEL SECURITY`);
  await client.query(`CREATE POLICY runtime_own_queue ON pgboss.${COMMON_JOB_TABLE} USING (name = ${pgLiteral(runQueueName(''))} || public.runtime_login_deployment()::text)`);
}

const pgLiteral = (text: string) => `'${text.replace(/'/g, "''")}'`;

/**
 * Takes a deleted deployment's runtime login away, so nothing logs in as it again: the admin login
 * stops it logging in and ends its open sessions (its runtimes are being stopped anyway), the platform's
 * login revokes every privilege it granted it in this database, and the admin login drops the role.
 * (`DROP OWNED BY` would need the platform's login to hold the runtime login's privileges.)
 * Idempotent: no role (already dropped, or never made), no-op.
 */
export async function dropRuntimeLogin(deps: Pick<Deps, 'db' | 'adminLogin'>, deploymentId: string): Promise<void> {
  const name = runtimeLoginRole(deploymentId);
  if (!(await deps.adminLogin.disableLogin(name))) return;
  await withTransaction(deps.db, async (client) => {
    // Same lock as the grants, so a launch granting it now is not half undone.
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [GRANT_LOCK]);
    const { rows } = await client.query<{ statement: string }>(
      `SELECT DISTINCT CASE
           WHEN d.classid = 'pg_class'::regclass THEN
             format('REVOKE ALL ON %s %s FROM %I', CASE WHEN c.relkind = 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, d.objid::regclass, $1::text)
           WHEN d.classid = 'pg_namespace'::regclass THEN format('REVOKE ALL ON SCHEMA %I FROM %I', n.nspname, $1::text)
           WHEN d.classid = 'pg_proc'::regclass THEN format('REVOKE ALL ON ROUTINE %s FROM %I', d.objid::regprocedure, $1::text)
           WHEN d.classid = 'pg_type'::regclass THEN format('REVOKE ALL ON TYPE %s FROM %I', d.objid::regtype, $1::text)
         END AS statement
         FROM pg_shdepend d
         LEFT JOIN pg_class c ON d.classid = 'pg_class'::regclass AND c.oid = d.objid
         LEFT JOIN pg_namespace n ON d.classid = 'pg_namespace'::regclass AND n.oid = d.objid
        WHERE d.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND d.refclassid = 'pg_authid'::regclass AND d.refobjid = $1::regrole AND d.deptype = 'a'`,
      [name],
    );
    for (const { statement } of rows) if (statement) await client.query(statement);
  });
  await deps.adminLogin.dropLogin(name);
}
