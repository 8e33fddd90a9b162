// The filter language as a table: each expression, valid or not, with the runs it selects from fixture
// data (through the real query path and PostgreSQL) or the position of its error. Then fuzzing: random
// strings never produce anything but a FilterError, and over HTTP never a 5xx.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../../src/ids.js';
import type { ServiceContext } from '../../../../src/context.js';
import { compileFilter, FilterError, SqlParams } from '../../../../src/platform/services/traces/filter.js';
import { ingestRunBatch } from '../../../../src/platform/ingest/ingest.service.js';
import { ensureProject } from '../../../../src/platform/services/traces/projects.service.js';
import { queryRuns } from '../../../../src/platform/services/traces/queries.service.js';
import { startTenantPlatform, type Tenant, type TestPlatform } from '../../../support/helpers.js';

let platform: TestPlatform;
let tenant: Tenant;
let ctx: ServiceContext;
let projectId: string;

const A = newId();
const A_LLM = newId();
const A_TOOL = newId();
const B = newId();
const B_LLM = newId();
const C = newId();
const T0 = Date.parse('2025-01-01T00:00:00Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();

beforeAll(async () => {
  ({ platform, tenant, ctx } = await startTenantPlatform());
  const project = await ensureProject(ctx, 'filter-fixtures');
  projectId = project.id;
  const session = { session_id: projectId };
  await ingestRunBatch(platform.deps, { workspaceId: tenant.workspace.id }, {
    post: [
      {
        ...session, id: A, name: 'alpha', run_type: 'chain', start_time: at(0), end_time: at(3), tags: ['prod', 'beta'],
        extra: { metadata: { user: 'alice', tier: 'gold', score: 7 } },
        inputs: { question: 'What is love?' }, outputs: { answer: "baby don't hurt me" },
      },
      {
        ...session, id: A_LLM, name: 'alpha-llm', run_type: 'llm', parent_run_id: A, start_time: at(0.5), end_time: at(2.5), tags: ['llm'],
        extra: { metadata: { user: 'dave', reviewer: 'bob' } },
        outputs: { usage_metadata: { input_tokens: 10, output_tokens: 20, total_tokens: 30, total_cost: 0.5 } },
      },
      { ...session, id: A_TOOL, name: 'alpha-tool', run_type: 'tool', parent_run_id: A, start_time: at(1), end_time: at(1.2), error: 'Timeout while fetching', extra: { metadata: {} } },
      {
        ...session, id: B, name: 'beta', run_type: 'chain', start_time: at(10), end_time: at(10.5), tags: ['dev'],
        extra: { metadata: { user: 'bob', tier: 'silver', score: 3, thread_id: 't-1' } },
      },
      {
        ...session, id: B_LLM, name: 'beta-llm', run_type: 'llm', parent_run_id: B, start_time: at(10.1), end_time: at(10.4),
        outputs: { usage_metadata: { input_tokens: 100, output_tokens: 50, total_tokens: 150, total_cost: 2 } },
      },
      { ...session, id: C, name: 'gamma', run_type: 'retriever', start_time: '2024-06-01T00:00:00Z', extra: { metadata: { user: 'carol', tier: 'gold' } } },
    ],
  });
});
afterAll(() => platform?.stop());

const ALL = ['alpha', 'alpha-llm', 'alpha-tool', 'beta', 'beta-llm', 'gamma'];
const except = (...names: string[]) => ALL.filter((name) => !names.includes(name));

// [expression, names it selects]
const VALID: [string, string[]][] = [
  ['eq(name, "alpha")', ['alpha']],
  ['neq(name, "alpha")', except('alpha')],
  ['eq(run_type, "llm")', ['alpha-llm', 'beta-llm']],
  ['in(run_type, ["tool", "retriever"])', ['alpha-tool', 'gamma']],
  ['eq(is_root, true)', ['alpha', 'beta', 'gamma']],
  ['eq(is_root, false)', ['alpha-llm', 'alpha-tool', 'beta-llm']],
  ['neq(is_root, true)', ['alpha-llm', 'alpha-tool', 'beta-llm']],
  ['eq(status, "error")', ['alpha-tool']],
  ['eq(status, "pending")', ['gamma']],
  ['neq(error, null)', ['alpha-tool']],
  ['eq(error, null)', except('alpha-tool')],
  ['eq(error, true)', ['alpha-tool']],
  ['eq(error, false)', except('alpha-tool')],
  ['search(error, "timeout")', ['alpha-tool']],
  ['like(error, "Timeout%")', ['alpha-tool']],
  ['like(name, "%-llm")', ['alpha-llm', 'beta-llm']],
  ['has(tags, "prod")', ['alpha']],
  ['has(tags, "nope")', []],
  ['eq(tags, "dev")', ['beta']],
  ['in(tags, ["beta", "dev"])', ['alpha', 'beta']],
  ['neq(tags, "prod")', except('alpha')],
  ['like(tags, "b%")', ['alpha']],
  ['exists(tags)', ['alpha', 'alpha-llm', 'beta']],
  // A parent's tokens and cost are its LLM descendants' (rolled up, as LangSmith shows and filters them).
  ['gt(total_tokens, 30)', ['beta', 'beta-llm']],
  ['gte(total_tokens, 30)', ['alpha', 'alpha-llm', 'beta', 'beta-llm']],
  ['lt(total_tokens, 100)', ['alpha', 'alpha-llm']],
  ['eq(total_tokens, 150)', ['beta', 'beta-llm']],
  ['in(total_tokens, [30, 150])', ['alpha', 'alpha-llm', 'beta', 'beta-llm']],
  ['gt(total_cost, 1)', ['beta', 'beta-llm']],
  ['lte(prompt_tokens, 10)', ['alpha', 'alpha-llm']],
  ['exists(total_tokens)', ['alpha', 'alpha-llm', 'beta', 'beta-llm']],
  ['gt(latency, 2)', ['alpha']],
  ['gte(latency, "2s")', ['alpha', 'alpha-llm']],
  ['lt(latency, 500ms)', ['alpha-tool', 'beta-llm']],
  ['lte(latency, 0.5)', ['alpha-tool', 'beta', 'beta-llm']],
  ['gt(latency, "1m")', []],
  ['gt(start_time, "2025-01-01T00:00:05Z")', ['beta', 'beta-llm']],
  ['lt(start_time, 2025-01-01)', ['gamma']],
  ['gte(start_time, "2025-01-01T00:00:00.500Z")', ['alpha-llm', 'alpha-tool', 'beta', 'beta-llm']],
  ['eq(end_time, null)', ['gamma']],
  ['exists(end_time)', except('gamma')],
  ['eq(metadata_key, "tier")', ['alpha', 'beta', 'gamma']],
  ['eq(metadata_value, "bob")', ['alpha-llm', 'beta']],
  // Bound: the key and the value must be the same metadata entry.
  ['and(eq(metadata_key, "user"), eq(metadata_value, "bob"))', ['beta']],
  ['and(eq(metadata_key, "reviewer"), eq(metadata_value, "bob"))', ['alpha-llm']],
  ['and(eq(metadata_value, "dave"), eq(metadata_key, "user"))', ['alpha-llm']],
  // Not bound: or() and nested and() test each condition on any entry.
  ['or(eq(metadata_key, "user"), eq(metadata_value, "bob"))', ['alpha', 'alpha-llm', 'beta', 'gamma']],
  ['and(and(eq(metadata_key, "user")), eq(metadata_value, "bob"))', ['alpha-llm', 'beta']],
  ['and(eq(metadata_key, "score"), gt(metadata_value, 5))', ['alpha']],
  ['and(eq(metadata_key, "score"), lt(metadata_value, 5))', ['beta']],
  ['and(eq(metadata_key, "score"), eq(metadata_value, 7))', ['alpha']],
  ['and(eq(metadata_key, "tier"), in(metadata_value, ["gold", "platinum"]))', ['alpha', 'gamma']],
  ['and(eq(metadata_key, "user"), eq(metadata_value, "alice"), eq(metadata_key, "tier"), eq(metadata_value, "silver"))', []],
  ['and(eq(metadata_key, "user"), eq(metadata_value, "bob"), eq(metadata_key, "tier"), eq(metadata_value, "silver"))', ['beta']],
  ['neq(metadata_key, "tier")', ['alpha-llm', 'alpha-tool', 'beta-llm']],
  ['and(eq(metadata_key, "tier"), neq(metadata_value, "gold"))', ['beta']],
  ['eq(input_key, "question")', ['alpha']],
  ['and(eq(output_key, "answer"), like(output_value, "%hurt%"))', ['alpha']],
  ['search("love")', ['alpha']],
  ['search("TIMEOUT")', ['alpha-tool']],
  ['search(name, "beta")', ['beta', 'beta-llm']],
  ['search(inputs, "love")', ['alpha']],
  ['and(eq(run_type, "llm"), gt(total_tokens, 50))', ['beta-llm']],
  ['or(eq(name, "alpha"), eq(name, "gamma"))', ['alpha', 'gamma']],
  ['not(eq(run_type, "llm"))', ['alpha', 'alpha-tool', 'beta', 'gamma']],
  ['not(gt(total_tokens, 100))', except('beta', 'beta-llm')],
  ['and(or(has(tags, "prod"), has(tags, "dev")), not(eq(name, "beta")))', ['alpha']],
  ['or(and(eq(run_type, "llm"), lt(total_cost, 1)), and(eq(is_root, true), eq(status, "pending")))', ['alpha-llm', 'gamma']],
  ['not(or(eq(is_root, true), eq(status, "error")))', ['alpha-llm', 'beta-llm']],
  ['not(not(eq(name, "beta")))', ['beta']],
  [`eq(trace_id, "${A}")`, ['alpha', 'alpha-llm', 'alpha-tool']],
  [`eq(parent_run_id, "${A}")`, ['alpha-llm', 'alpha-tool']],
  [`in(id, ["${B}", "${C}"])`, ['beta', 'gamma']],
  [`neq(id, "${B}")`, except('beta')],
  ['eq(parent_run_id, null)', ['alpha', 'beta', 'gamma']],
  ['eq(thread_id, "t-1")', ['beta']],
  [" and(  eq( name , 'alpha' ) , ) ", ['alpha']],
  ['eq(name, "al\\"pha")', []],
  ['eq(feedback_key, "correctness")', []],
  ['gt(first_token_time, "2000-01-01")', []],
  [`eq(session_id, "${'00000000-0000-4000-8000-000000000000'}")`, []],
];

// [expression, error position]
const INVALID: [string, number][] = [
  ['  ', 2],
  ['eq(name "alpha")', 8],
  ['eq(nme, "x")', 3],
  ['eq(name, "x"', 12],
  ['and()', 4],
  ['foo(name, 1)', 0],
  ['eq(total_tokens, "many")', 17],
  ['gt(is_root, true)', 0],
  ['eq(start_time, "not a date")', 15],
  ['has(name, "x")', 0],
  ['eq(id, "123")', 7],
  ['in(name, "x")', 9],
  ['in(name, [])', 9],
  ['eq(name, [1, 2])', 9],
  ['gt(latency, "fast")', 12],
  ["eq(name, 'unterminated)", 9],
  ['and(eq(name, "a"), or(eq(name, "b"))', 36],
  ['not(eq(name, "a"), eq(name, "b"))', 17],
  ['eq(name, "a") extra', 14],
  ['gt(start_time, null)', 15],
  ['like(total_tokens, "1%")', 0],
  ['exists(nothing)', 7],
  ['eq(name, 12abc)', 9],
  ['and(eq(metadata_key, "a"), gt(metadata_value, "x", 1))', 49],
  ['and(eq(metadata_key, "score"), has(metadata_value, 5))', 31],
  ['search(tags, "x")', 7],
  ['eq(is_root, "yes")', 12],
];

async function names(filter: string): Promise<string[]> {
  const page = await queryRuns(ctx, { session: [projectId], filter, limit: 1000 });
  return page.runs.map((run) => run.name).sort();
}

describe('filter language table', () => {
  it(`has at least 60 expressions`, () => {
    expect(VALID.length + INVALID.length).toBeGreaterThanOrEqual(60);
  });

  it.each(VALID)('%s', async (filter, expected) => {
    expect(await names(filter)).toEqual([...expected].sort());
  });

  it.each(INVALID)('rejects %s at position %i', async (filter, position) => {
    const error = await queryRuns(ctx, { session: [projectId], filter }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(FilterError);
    expect((error as FilterError).position.position).toBe(position);
    expect((error as FilterError).message).toMatch(new RegExp(`^Invalid filter at position ${position} \\(line 1, column ${position + 1}\\)`));
  });

  it('applies trace_filter to the root and tree_filter to any run of the trace', async () => {
    const byTrace = await queryRuns(ctx, { session: [projectId], traceFilter: 'has(tags, "prod")', filter: 'eq(run_type, "llm")' });
    expect(byTrace.runs.map((run) => run.name)).toEqual(['alpha-llm']);
    const byTree = await queryRuns(ctx, { session: [projectId], treeFilter: 'eq(status, "error")', isRoot: true });
    expect(byTree.runs.map((run) => run.name)).toEqual(['alpha']);
  });

  it('never puts values into the SQL text', () => {
    const params = new SqlParams();
    const sql = compileFilter(`and(eq(name, "x'; DROP TABLE trace_runs; --"), eq(metadata_key, "k"), like(metadata_value, "%'%"))`, 'r', params);
    expect(sql).not.toContain('DROP');
    expect(sql).not.toContain("'%");
    expect(params.values).toEqual(["x'; DROP TABLE trace_runs; --", 'k', "%'%"]);
  });
});

// ───────────────────────────── fuzzing ─────────────────────────────

/** A deterministic PRNG, so a failing case can be reproduced from its seed. */
function rng(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TOKENS = ['and(', 'or(', 'not(', 'eq(', 'neq(', 'gt(', 'gte(', 'lt(', 'has(', 'search(', 'exists(', 'in(', 'like(', ')', ',', '[', ']',
  'name', 'tags', 'latency', 'start_time', 'metadata_key', 'metadata_value', 'total_tokens', 'is_root', 'error', 'id',
  '"x"', "'y'", '"5s"', '1', '-2.5', '1e400', 'null', 'true', '2024-01-01', '2024-13-45T99:99:99Z', '"\\u0000"', '"\\ud800"', ' ', '"', '\\', '%', 'é', '\u0000'];

function randomText(random: () => number): string {
  const length = Math.floor(random() * 12);
  let text = '';
  for (let i = 0; i < length; i++) {
    text += random() < 0.8 ? TOKENS[Math.floor(random() * TOKENS.length)] : String.fromCharCode(Math.floor(random() * 0x3000));
  }
  return text;
}

const FIELDS = ['name', 'run_type', 'tags', 'latency', 'start_time', 'end_time', 'total_tokens', 'total_cost', 'is_root', 'error', 'id', 'trace_id', 'metadata_key', 'metadata_value', 'feedback_score', 'input_value', 'status'];
const OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'has', 'like'];
const VALUES = ['"x"', '1', '-1.5', '1e308', '1e400', 'null', 'true', '"2024-01-01"', '"99999-01-01"', '"0001-01-01T00:00:00+14:00"', '"5s"', '10ms', `"${A}"`, '"%_\\\\"', '"\\u0000"'];

/** Grammar-shaped random expressions: most parse, so the SQL they compile to is executed. */
function randomExpression(random: () => number, depth = 0): string {
  const pick = <T,>(list: T[]) => list[Math.floor(random() * list.length)]!;
  const roll = random();
  if (depth < 3 && roll < 0.25) {
    const args = Array.from({ length: 1 + Math.floor(random() * 3) }, () => randomExpression(random, depth + 1));
    return `${pick(['and', 'or'])}(${args.join(', ')})`;
  }
  if (depth < 3 && roll < 0.32) return `not(${randomExpression(random, depth + 1)})`;
  if (roll < 0.4) return `in(${pick(FIELDS)}, [${pick(VALUES)}, ${pick(VALUES)}])`;
  if (roll < 0.45) return `exists(${pick(FIELDS)})`;
  if (roll < 0.5) return `search(${pick(VALUES)})`;
  return `${pick(OPS)}(${pick(FIELDS)}, ${pick(VALUES)})`;
}

describe('filter fuzzing', () => {
  it('the parser and compiler only ever throw FilterError on 20,000 random strings', () => {
    const random = rng(42);
    for (let i = 0; i < 20_000; i++) {
      const text = i % 2 ? randomText(random) : randomExpression(random);
      try {
        compileFilter(text, 'r', new SqlParams());
      } catch (error) {
        if (!(error instanceof FilterError)) throw new Error(`${JSON.stringify(text)} threw ${String(error)}`);
      }
    }
  });

  it('POST /runs/query answers 200 or 400, never 5xx, for 300 random filters', async () => {
    const random = rng(7);
    const statuses = new Map<number, number>();
    for (let i = 0; i < 300; i++) {
      const filter = i % 3 === 0 ? randomText(random) : randomExpression(random);
      const response = await fetch(`${platform.url}/runs/query`, {
        method: 'POST',
        headers: { 'x-api-key': tenant.adminKey, 'content-type': 'application/json' },
        body: JSON.stringify({ session: [projectId], filter, trace_filter: i % 5 === 0 ? filter : undefined }),
      });
      const body = await response.json();
      if (response.status !== 200 && response.status !== 400) throw new Error(`${JSON.stringify(filter)}: ${response.status} ${JSON.stringify(body)}`);
      if (response.status === 400) expect(body).toMatchObject({ error: expect.any(String), details: expect.any(String) });
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    }
    // Both outcomes were exercised.
    expect(statuses.get(200)).toBeGreaterThan(20);
    expect(statuses.get(400)).toBeGreaterThan(20);
  });

  it('POST /runs/query/validate reports the position', async () => {
    const response = await fetch(`${platform.url}/runs/query/validate`, {
      method: 'POST',
      headers: { 'x-api-key': tenant.adminKey, 'content-type': 'application/json' },
      body: JSON.stringify({ filter: 'and(eq(name, "a"),' }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ position: 18, line: 1, column: 19, expected: expect.arrayContaining(['"and"', '")"']) });
    const ok = await fetch(`${platform.url}/api/v1/runs/query/validate`, {
      method: 'POST',
      headers: { 'x-api-key': tenant.adminKey, 'content-type': 'application/json' },
      body: JSON.stringify({ filter: 'eq(name, "a")', trace_filter: 'has(tags, "x")' }),
    });
    expect(await ok.json()).toEqual({ valid: true });
  });
});
