// The runs query reads an index in order: at a size where PostgreSQL would rather scan the whole table
// for the old `session_id = ANY(…)` form, newest-N of one project, of several, and with each indexed
// filter is planned as an index scan, and answers what a brute-force ordering of the rows answers.
// trace_runs is partitioned by week: the runs fill a week with its own partition, and each partition's
// index scan is named by the trace_runs index it belongs to.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fillTraceRuns } from '../../../../bench/trace-run-fill.js';
import { createTracePartitions, listTracePartitions } from '../../../../src/platform/services/traces/trace-partitions.store.js';
import { ALL_TIME, type RunSearch, runSearchSql, searchRuns, type TimeSlice, timeSlices } from '../../../../src/platform/services/traces/trace-run-search.store.js';
import { applyPatchesStatement, findParentRunsSql } from '../../../../src/platform/ingest/ingest.store.js';
import { findRunSql } from '../../../../src/platform/services/traces/trace-runs.store.js';
import { rollUpUsageStatement } from '../../../../src/platform/ingest/usage-rollups.store.js';
import { databaseUrl } from '../../../support/helpers.js';

const RUNS = 40_000;
// Another tenant's single project, whose runs (numbers LATER_FROM..LATER_TO of the fill, one every 2 s)
// cross from the week of 29 December 2025 into the week of 5 January 2026 at run 172,800.
const laterTenant = randomUUID();
const laterProject = randomUUID();
const LATER_FROM = 160_000;
const LATER_TO = 176_000;
const tenantId = randomUUID();
const projects = Array.from({ length: 4 }, () => randomUUID());
let pool: pg.Pool;
/** The slices of time the service queries (traceTimeSlices, without its cache). */
let slices: TimeSlice[];

type PlanNode = { 'Node Type': string; 'Index Name'?: string; 'Relation Name'?: string; 'Actual Loops'?: number; Plans?: PlanNode[] };

/** The week partition that holds the runs (they start on Thursday 1 January 2026). */
const DATA_PARTITION = 'trace_runs_20251229';

/**
 * The distinct scan nodes of the plan of `search` on the partition that holds the runs, as "Seq Scan"
 * or "<node type> <index name>", the partition's index named by the trace_runs index it is a part of.
 * (The other partitions are empty here: any scan of them costs nothing.)
 */
async function scans(search: RunSearch): Promise<string[]> {
  const { rows: parts } = await pool.query<{ child: string; parent: string }>(
    `SELECT c.relname AS child, p.relname AS parent FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
      WHERE c.relkind = 'i' AND p.relname LIKE 'trace_runs%'`,
  );
  const parentIndex = new Map(parts.map((row) => [row.child, row.parent]));
  const { text, values } = runSearchSql(tenantId, search, slices);
  const { rows } = await pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) ${text}`, values);
  const found = new Set<string>();
  const visit = (node: PlanNode) => {
    if (node['Node Type'].includes('Scan') && (node['Relation Name'] === DATA_PARTITION || node['Index Name']?.startsWith(`${DATA_PARTITION}_`))) {
      const index = node['Index Name'] && (parentIndex.get(node['Index Name']) ?? node['Index Name']);
      found.add(index ? `${node['Node Type']} ${index}` : node['Node Type']);
    }
    for (const child of node.Plans ?? []) visit(child);
  };
  visit(rows[0]!['QUERY PLAN'][0].Plan);
  return [...found];
}

beforeAll(async () => {
  pool = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
  // The fill's runs start on 1 January 2026 (a day's worth of them); the next week's partition is for
  // the runs of another tenant (see "newest first across partitions").
  await createTracePartitions(pool, new Date('2026-01-01T00:00:00Z'), new Date('2026-01-06T00:00:00Z'));
  await fillTraceRuns(pool, tenantId, projects, 0, RUNS);
  await fillTraceRuns(pool, laterTenant, [laterProject], LATER_FROM, LATER_TO);
  slices = timeSlices(await listTracePartitions(pool));
  // VACUUM too, as autovacuum would have by a million rows: index-only scans need the visibility map.
  await pool.query('VACUUM ANALYZE trace_runs');
}, 120_000);

afterAll(async () => {
  await pool.query('DELETE FROM trace_runs WHERE tenant_id = ANY($1::uuid[])', [[tenantId, laterTenant]]);
  await pool.end();
});

describe('newest runs of a project', () => {
  const base: RunSearch = { sessions: [projects[0]!], ascending: false, limit: 101 };

  it('is a sequential scan in the old = ANY form at this size (the premise of the tests below)', async () => {
    const { rows } = await pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
      `EXPLAIN (FORMAT JSON) SELECT id FROM trace_runs r WHERE r.tenant_id = $1 AND r.session_id = ANY($2::uuid[]) ORDER BY r.start_time DESC, r.id DESC LIMIT 101`,
      [tenantId, [projects[0]]],
    );
    expect(JSON.stringify(rows[0]!['QUERY PLAN'])).toContain('Seq Scan');
  });

  it('reads the project index in order', async () => {
    expect(await scans(base)).toEqual(['Index Scan trace_runs_tenant_id_session_id_start_time_id_idx']);
  });

  it.each([
    ['eq(name, …)', { filter: 'eq(name, "step_7")' }, 'trace_runs_tenant_id_session_id_name_start_time_id_idx'],
    ['eq(status, …) with no hits', { filter: 'eq(status, "error")' }, 'trace_runs_tenant_id_session_id_status_start_time_id_idx'],
    ['run type', { runType: 'retriever' }, 'trace_runs_tenant_id_session_id_run_type_start_time_id_idx'],
    ['eq(run_type, …)', { filter: 'eq(run_type, "retriever")' }, 'trace_runs_tenant_id_session_id_run_type_start_time_id_idx'],
    ['root runs', { isRoot: true }, 'trace_runs_tenant_id_session_id_is_root_start_time_id_idx'],
  ] as const)('with %s reads that field’s index', async (_, filter, index) => {
    const plan = await scans({ ...base, ...filter });
    expect(plan).not.toContain('Seq Scan');
    expect(plan.some((scan) => scan.endsWith(index))).toBe(true);
  });

  it.each([
    ['has(tags, …)', 'has(tags, "vip")', 'trace_runs_tags_idx'],
    ['a metadata key and value', 'and(eq(metadata_key, "user_id"), eq(metadata_value, "user-7"))', 'trace_runs_extra_idx'],
  ])('with %s uses an index, never a sequential scan', async (_, filter, index) => {
    const plan = await scans({ ...base, filter });
    expect(plan).not.toContain('Seq Scan');
    expect(plan.some((scan) => scan.includes('trace_runs_tenant_id_session_id') || scan.endsWith(index))).toBe(true);
  });

  // The v2 runs query (POST /api/v2/runs/query) always bounds start_time (the last day by default).
  it.each([
    ['one project', base, 'trace_runs_tenant_id_session_id_start_time_id_idx'],
    ['root runs', { ...base, isRoot: true }, 'trace_runs_tenant_id_session_id_is_root_start_time_id_idx'],
    ['several projects', { ...base, sessions: projects.slice(0, 3) }, 'trace_runs_tenant_id_session_id_start_time_id_idx'],
  ] as const)('within a start_time window (%s) reads the same index in order', async (_, search, index) => {
    const window = { startTime: new Date('2026-01-01T00:00:00Z'), endTime: new Date('2026-01-02T12:00:00Z') };
    expect(await scans({ ...search, ...window })).toEqual([`Index Scan ${index}`]);
  });

  it('of several projects merges per-project index scans and answers the newest across them', async () => {
    const search: RunSearch = { sessions: projects.slice(0, 3), ascending: false, limit: 50 };
    expect(await scans(search)).toEqual(['Index Scan trace_runs_tenant_id_session_id_start_time_id_idx']);
    const { rows: got } = await searchRuns(pool, tenantId, search);
    const { rows: expected } = await pool.query<{ id: string }>(
      `SELECT id FROM trace_runs WHERE tenant_id = $1 AND session_id = ANY($2::uuid[]) ORDER BY start_time DESC, id DESC LIMIT 50`,
      [tenantId, projects.slice(0, 3)],
    );
    expect(got.map((run) => run.id)).toEqual(expected.map((row) => row.id));
    expect(new Set(got.map((run) => run.sessionId)).size).toBeGreaterThan(1);
  });

  it('pages with the keyset cursor across several projects, oldest first too, without gaps or repeats', async () => {
    for (const ascending of [false, true]) {
      const seen: string[] = [];
      let after: RunSearch['after'] = null;
      for (let page = 0; page < 3; page++) {
        const { rows: runs } = await searchRuns(pool, tenantId, { sessions: projects.slice(1, 4), ascending, limit: 30, after, filter: 'eq(run_type, "llm")' });
        seen.push(...runs.map((run) => run.id));
        const last = runs.at(-1)!;
        after = { startTime: last.startTime, id: last.id };
      }
      const { rows } = await pool.query<{ id: string }>(
        `SELECT id FROM trace_runs WHERE tenant_id = $1 AND session_id = ANY($2::uuid[]) AND run_type = 'llm'
          ORDER BY start_time ${ascending ? 'ASC' : 'DESC'}, id ${ascending ? 'ASC' : 'DESC'} LIMIT 90`,
        [tenantId, projects.slice(1, 4)],
      );
      expect(seen).toEqual(rows.map((row) => row.id));
    }
  });

  it('walks a filter no index serves in windows: short pages whose cursor carries on, together all the matches', async () => {
    const filter = 'gt(latency, 4.9)';
    const { rows: expected } = await pool.query<{ id: string }>(
      `SELECT id FROM trace_runs WHERE tenant_id = $1 AND session_id = $2 AND end_time - start_time > interval '4.9 seconds'
        ORDER BY start_time DESC, id DESC`,
      [tenantId, projects[0]],
    );
    expect(expected.length).toBeGreaterThan(10);
    const seen: string[] = [];
    let after: RunSearch['after'] = null;
    let pages = 0;
    let shortPages = 0;
    for (;;) {
      // One 200-row window per call (no time budget): a page holds what that window held, up to the limit.
      const { rows, walkedTo } = await searchRuns(pool, tenantId, { ...base, filter, limit: 11, after }, { firstWindow: 200, budgetMs: 0 });
      pages++;
      seen.push(...rows.slice(0, 10).map((run) => run.id));
      if (rows.length > 10) after = { startTime: rows[9]!.startTime, id: rows[9]!.id };
      else if (walkedTo) {
        shortPages++;
        after = walkedTo;
      } else break;
    }
    expect(seen).toEqual(expected.map((row) => row.id));
    expect(shortPages).toBeGreaterThan(0);
    expect(pages).toBeGreaterThan(2);
  });

  it.each([
    ['a latency range', 'gt(latency, 4.9)', `end_time - start_time > interval '4.9 seconds'`],
    ['a token range', 'and(gte(total_tokens, 1990), lt(prompt_tokens, 1400))', 'total_tokens >= 1990 AND prompt_tokens < 1400'],
  ])('with %s picks the page by an index-only scan of the project index (rows it skips are never fetched)', async (_, filter, condition) => {
    const search: RunSearch = { ...base, filter, limit: 20 };
    expect(await scans(search)).toContain('Index Only Scan trace_runs_tenant_id_session_id_start_time_id_idx');
    expect(await scans(search)).not.toContain('Seq Scan');
    const { rows: expected } = await pool.query<{ id: string }>(
      `SELECT id FROM trace_runs WHERE tenant_id = $1 AND session_id = $2 AND ${condition} ORDER BY start_time DESC, id DESC LIMIT 20`,
      [tenantId, projects[0]],
    );
    const { rows } = await pool.query<{ id: string }>(runSearchSql(tenantId, search, slices));
    expect(rows.map((run) => run.id)).toEqual(expected.map((row) => row.id));
    expect(rows).toHaveLength(20);
  });

  it('answers a filter no index serves that matches nothing with an empty first page and a cursor', async () => {
    const { rows, walkedTo } = await searchRuns(pool, tenantId, { ...base, filter: 'gt(latency, 100000)' }, { firstWindow: 1_000, budgetMs: 0 });
    expect(rows).toEqual([]);
    expect(walkedTo).toBeDefined();
  });
});

/** The partitions of trace_runs a statement's execution read (scans that ran at least once). */
async function partitionsRead(client: pg.Pool | pg.PoolClient, statement: { text: string; values: unknown[] }): Promise<string[]> {
  const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`, statement.values);
  const read = new Set<string>();
  const visit = (node: PlanNode) => {
    const relation = node['Relation Name'];
    if (node['Node Type'].includes('Scan') && relation?.startsWith('trace_runs_') && (node['Actual Loops'] ?? 0) > 0) read.add(relation);
    for (const child of node.Plans ?? []) visit(child);
  };
  visit(rows[0]!['QUERY PLAN'][0].Plan);
  return [...read];
}

/** The partitions of trace_runs in a statement's plan, whether its execution reads them or not. */
async function partitionsPlanned(client: pg.Pool | pg.PoolClient, statement: { text: string; values: unknown[] }): Promise<string[]> {
  const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) ${statement.text}`, statement.values);
  const planned = new Set<string>();
  const visit = (node: PlanNode) => {
    if (node['Relation Name']?.startsWith('trace_runs_')) planned.add(node['Relation Name']);
    for (const child of node.Plans ?? []) visit(child);
  };
  visit(rows[0]!['QUERY PLAN'][0].Plan);
  return [...planned];
}

describe('newest first across partitions', () => {
  const NEWER_WEEK = 'trace_runs_20260105';
  const OLDER_WEEK = DATA_PARTITION;
  /** The partitions holding the later tenant's runs that a search of its project read. */
  const weeksRead = async (search: Partial<RunSearch>, over: TimeSlice[]) => {
    const read = await partitionsRead(pool, runSearchSql(laterTenant, { sessions: [laterProject], ascending: false, limit: 101, ...search }, over));
    return read.filter((name) => name === NEWER_WEEK || name === OLDER_WEEK).sort();
  };

  it('splits time into runs of consecutive week partitions and the ranges around them', () => {
    const week = (day: string) => ({ name: '', from: new Date(`${day}T00:00:00Z`), to: new Date(new Date(`${day}T00:00:00Z`).getTime() + 7 * 86_400_000) });
    const at = (day: string) => new Date(`${day}T00:00:00Z`);
    expect(timeSlices([week('2026-01-05'), week('2026-01-12'), week('2026-02-02')])).toEqual([
      { from: null, to: at('2026-01-05') },
      { from: at('2026-01-05'), to: at('2026-01-19') },
      { from: at('2026-01-19'), to: at('2026-02-02') },
      { from: at('2026-02-02'), to: at('2026-02-09') },
      { from: at('2026-02-09'), to: null },
    ]);
    expect(timeSlices([])).toEqual(ALL_TIME);
  });

  it('over the whole table (the default partition in range) reads the head of every partition (the premise)', async () => {
    expect(await weeksRead({}, ALL_TIME)).toEqual([OLDER_WEEK, NEWER_WEEK]);
  });

  it('reads only the newest partition when the page fills from it, and the next one only when it does not', async () => {
    expect(await weeksRead({}, slices)).toEqual([NEWER_WEEK]);
    // About 40 runs named step_7 are in the newer week: a page of 20 of them is read from it alone.
    expect(await weeksRead({ filter: 'eq(name, "step_7")', limit: 20 }, slices)).toEqual([NEWER_WEEK]);
    expect(await weeksRead({ isRoot: true }, slices)).toEqual([NEWER_WEEK]);
    // The newer week holds 3,200 of the project's runs: a page of 5,000 reads on into the older one.
    expect(await weeksRead({ limit: 5_000 }, slices)).toEqual([OLDER_WEEK, NEWER_WEEK]);
    // A cursor in the older week prunes the newer one.
    const { rows } = await pool.query<{ start_time: string; id: string }>(
      `SELECT start_time::text, id FROM ${OLDER_WEEK} WHERE tenant_id = $1 ORDER BY start_time DESC, id DESC LIMIT 1`,
      [laterTenant],
    );
    expect(await weeksRead({ after: { startTime: rows[0]!.start_time, id: rows[0]!.id } }, slices)).toEqual([OLDER_WEEK]);
  });

  /**
   * The data weeks the statements of searchRuns read for a search of the later project (checked
   * against a brute-force ordering of `where`), and how many statements it sent.
   */
  const searched = async (search: Partial<RunSearch>, where: string) => {
    const sent: { text: string; values: unknown[] }[] = [];
    const recording = new Proxy(pool, {
      get: (target, property, receiver) =>
        property === 'query'
          ? (statement: string | { text: string; values: unknown[] }, values?: unknown[]) => {
              if (typeof statement === 'string') return target.query(statement, values); // the partitions, from the catalog
              sent.push(statement);
              return target.query(statement);
            }
          : Reflect.get(target, property, receiver),
    });
    const full = { sessions: [laterProject], ascending: false, limit: 100, ...search };
    const { rows } = await searchRuns(recording, laterTenant, full);
    const read = new Set<string>();
    const planned = new Set<string>();
    for (const statement of sent) {
      for (const name of await partitionsRead(pool, statement)) if (name === NEWER_WEEK || name === OLDER_WEEK) read.add(name);
      for (const name of await partitionsPlanned(pool, statement)) if (name === NEWER_WEEK || name === OLDER_WEEK) planned.add(name);
    }
    const after = full.after ? `AND (start_time, id) < ('${full.after.startTime}'::timestamptz, '${full.after.id}'::uuid)` : '';
    const { rows: expected } = await pool.query<{ id: string }>(
      `SELECT id FROM trace_runs WHERE tenant_id = $1 AND session_id = ANY($2::uuid[]) AND ${where} ${after} ORDER BY start_time DESC, id DESC LIMIT ${full.limit}`,
      [laterTenant, full.sessions],
    );
    expect(rows.map((run) => run.id)).toEqual(expected.map((row) => row.id));
    return { weeks: [...read].sort(), planned: [...planned].sort(), statements: sent.length };
  };

  it('with a metadata key and value reads the partitions in turn, newest first, and stops once the page is full', async () => {
    const filter = 'and(eq(metadata_key, "env"), eq(metadata_value, "prod"))';
    const where = `extra->'metadata'->>'env' = 'prod'`;
    // About 2,200 of the newer week's 3,200 runs are in env prod.
    expect((await searched({ filter }, where)).weeks).toEqual([NEWER_WEEK]);
    expect((await searched({ filter, limit: 3_000 }, where)).weeks).toEqual([OLDER_WEEK, NEWER_WEEK]);
  });

  it('reads a project\'s newest runs, with or without an indexed filter, a partition at a time, so a statement plans only the partitions it reads', async () => {
    const newest = { weeks: [NEWER_WEEK], planned: [NEWER_WEEK], statements: 1 };
    expect(await searched({}, 'true')).toEqual(newest);
    expect(await searched({ sessions: [laterProject, randomUUID()] }, 'true')).toEqual(newest);
    expect(await searched({ filter: 'has(tags, "env:prod")' }, `tags @> ARRAY['env:prod']`)).toEqual(newest);
    // The newer week holds 3,200 of the project's runs: a page of 5,000 reads on into the older one.
    expect(await searched({ limit: 5_000 }, 'true')).toEqual({ weeks: [OLDER_WEEK, NEWER_WEEK], planned: [OLDER_WEEK, NEWER_WEEK], statements: 2 });
    // A filter that matches nothing reads every partition.
    expect((await searched({ filter: 'eq(name, "no such run")' }, `name = 'no such run'`)).weeks).toEqual([OLDER_WEEK, NEWER_WEEK]);
    // A cursor in the older week: no statement names the newer one.
    const { rows } = await pool.query<{ start_time: string; id: string }>(
      `SELECT start_time::text, id FROM ${OLDER_WEEK} WHERE tenant_id = $1 ORDER BY start_time DESC, id DESC LIMIT 1`,
      [laterTenant],
    );
    expect(await searched({ after: { startTime: rows[0]!.start_time, id: rows[0]!.id } }, 'true')).toEqual({ weeks: [OLDER_WEEK], planned: [OLDER_WEEK], statements: 1 });
  });

  it('answers across the partition boundary what a brute-force ordering answers, in pages', async () => {
    const { rows: expected } = await pool.query<{ id: string }>(
      `SELECT id FROM trace_runs WHERE tenant_id = $1 AND session_id = $2 ORDER BY start_time DESC, id DESC LIMIT 4000`,
      [laterTenant, laterProject],
    );
    const seen: string[] = [];
    let after: RunSearch['after'] = null;
    while (seen.length < 4000) {
      const { rows } = await searchRuns(pool, laterTenant, { sessions: [laterProject], ascending: false, limit: 1000, after });
      seen.push(...rows.map((run) => run.id));
      after = { startTime: rows.at(-1)!.startTime, id: rows.at(-1)!.id };
    }
    expect(seen).toEqual(expected.map((row) => row.id));
  });
});

describe('one run by id', () => {
  it('is read (GET /runs/{id}), patched and given its descendants’ usage in its one partition, found by its start time', async () => {
    const { rows } = await pool.query<{ id: string }>('SELECT id FROM trace_runs WHERE tenant_id = $1 ORDER BY id LIMIT 1', [tenantId]);
    const id = rows[0]!.id;
    expect(await partitionsRead(pool, { text: findRunSql(), values: [tenantId, id] })).toEqual([DATA_PARTITION]);

    const usage = { totalTokens: null, promptTokens: null, completionTokens: null, totalCost: null, promptCost: null, completionCost: null };
    const patch = { id, endTime: '2026-01-01T00:00:10Z', inputs: null, outputs: null, error: null, extra: null, events: null, serialized: null, tags: null, usage, firstTokenTime: null, threadId: null, raw: {} };
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      expect(await partitionsRead(client, applyPatchesStatement(tenantId, [patch as never]))).toEqual([DATA_PARTITION]);
      // A descendant's usage added to it (and to an ancestor not stored, which it waits for).
      const owed = [{ from: randomUUID(), ancestors: [id, randomUUID()], usage: { ...usage, totalTokens: 5 } }];
      expect(await partitionsRead(client, rollUpUsageStatement(tenantId, owed))).toEqual([DATA_PARTITION]);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });

  it("is looked up as a parent (ingest deriving a child's dotted order) in its one partition", async () => {
    const { rows } = await pool.query<{ id: string }>('SELECT id FROM trace_runs WHERE tenant_id = $1 ORDER BY id LIMIT 2', [tenantId]);
    const ids = rows.map((row) => row.id);
    expect(await partitionsRead(pool, { text: findParentRunsSql(), values: [tenantId, ids] })).toEqual([DATA_PARTITION]);
    const { rows: found } = await pool.query<{ id: string }>(findParentRunsSql(), [tenantId, ids]);
    expect(found.map((row) => row.id).sort()).toEqual(ids);
  });
});
