// The run filter language: peggy parses (grammar in filter.peggy, compiled once at module load), this
// file type-checks the AST and compiles it to parameterised SQL over a trace_runs alias. Values never
// reach the SQL text: each one becomes a bind parameter. Shared by run queries and bulk export.
//
// Semantics worth knowing:
// - neq is IS DISTINCT FROM (a run without the field matches neq), not(x) is NOT COALESCE(x, false).
// - eq/neq with null test for absence; exists(field) is "present" (for tags: at least one tag).
// - latency is end_time - start_time in seconds; it takes numbers (seconds) or durations ("1.5s", 200ms).
// - Key/value families (metadata_key/metadata_value, input_key/input_value, output_key/output_value,
//   feedback_key/feedback_score): inside one and(), the n-th comparison on a *_key and the n-th on its
//   value are bound to the same entry; elsewhere each tests any entry.
// - search(value) looks in name, error, inputs and outputs (case-insensitive substring);
//   search(field, value) in that field only.
import { readFileSync } from 'node:fs';
import peggy from 'peggy';
import { escapeLiteral } from 'pg';
import { AppError } from '../../../errors.js';
import { isUuid } from '../../../ids.js';

type Loc = { start: { offset: number; line: number; column: number }; end: { offset: number } };
type FieldRef = { name: string; loc: Loc };
type FilterValue =
  | { kind: 'null'; value: null; loc: Loc }
  | { kind: 'boolean'; value: boolean; loc: Loc }
  | { kind: 'number'; value: number; loc: Loc }
  | { kind: 'string'; value: string; loc: Loc }
  | { kind: 'datetime'; value: string; loc: Loc }
  | { kind: 'duration'; value: string; loc: Loc }
  | { kind: 'list'; value: FilterValue[]; loc: Loc };
export type FilterNode =
  | { type: 'and' | 'or'; args: FilterNode[]; loc: Loc }
  | { type: 'not'; arg: FilterNode; loc: Loc }
  | { type: 'cmp'; op: Comparator; field: FieldRef; value: FilterValue; loc: Loc }
  | { type: 'exists'; field: FieldRef; loc: Loc }
  | { type: 'search'; field: FieldRef | null; value: FilterValue; loc: Loc };
type Comparator = 'eq' | 'neq' | 'gt' | 'gte' | 'lt' | 'lte' | 'has' | 'like' | 'in';

type Kind = 'uuid' | 'text' | 'time' | 'number' | 'latency' | 'boolean' | 'tags' | 'json' | 'pairKey' | 'pairValue';
type Family = 'metadata' | 'input' | 'output' | 'feedback';
type FieldDef = { kind: Kind; column: (alias: string) => string; family?: Family };

const col = (name: string) => (alias: string) => `${alias}.${name}`;
const FAMILY_SOURCE: Record<Family, (alias: string) => string> = {
  metadata: (a) => `${a}.extra->'metadata'`,
  input: (a) => `${a}.inputs`,
  output: (a) => `${a}.outputs`,
  feedback: (a) => `${a}.feedback_stats`,
};

const FILTER_FIELDS: Record<string, FieldDef> = {
  id: { kind: 'uuid', column: col('id') },
  trace_id: { kind: 'uuid', column: col('trace_id') },
  parent_run_id: { kind: 'uuid', column: col('parent_run_id') },
  session_id: { kind: 'uuid', column: col('session_id') },
  reference_example_id: { kind: 'uuid', column: col('reference_example_id') },
  name: { kind: 'text', column: col('name') },
  run_type: { kind: 'text', column: col('run_type') },
  status: { kind: 'text', column: col('status') },
  error: { kind: 'text', column: col('error') },
  thread_id: { kind: 'text', column: col('thread_id') },
  trace_tier: { kind: 'text', column: col('trace_tier') },
  start_time: { kind: 'time', column: col('start_time') },
  end_time: { kind: 'time', column: col('end_time') },
  first_token_time: { kind: 'time', column: col('first_token_time') },
  latency: { kind: 'latency', column: (a) => `EXTRACT(EPOCH FROM (${a}.end_time - ${a}.start_time))` },
  total_tokens: { kind: 'number', column: col('total_tokens') },
  prompt_tokens: { kind: 'number', column: col('prompt_tokens') },
  completion_tokens: { kind: 'number', column: col('completion_tokens') },
  total_cost: { kind: 'number', column: col('total_cost') },
  prompt_cost: { kind: 'number', column: col('prompt_cost') },
  completion_cost: { kind: 'number', column: col('completion_cost') },
  is_root: { kind: 'boolean', column: col('is_root') },
  tags: { kind: 'tags', column: col('tags') },
  inputs: { kind: 'json', column: col('inputs') },
  outputs: { kind: 'json', column: col('outputs') },
  metadata_key: { kind: 'pairKey', column: FAMILY_SOURCE.metadata, family: 'metadata' },
  metadata_value: { kind: 'pairValue', column: FAMILY_SOURCE.metadata, family: 'metadata' },
  input_key: { kind: 'pairKey', column: FAMILY_SOURCE.input, family: 'input' },
  input_value: { kind: 'pairValue', column: FAMILY_SOURCE.input, family: 'input' },
  output_key: { kind: 'pairKey', column: FAMILY_SOURCE.output, family: 'output' },
  output_value: { kind: 'pairValue', column: FAMILY_SOURCE.output, family: 'output' },
  feedback_key: { kind: 'pairKey', column: FAMILY_SOURCE.feedback, family: 'feedback' },
  feedback_score: { kind: 'pairValue', column: FAMILY_SOURCE.feedback, family: 'feedback' },
};

const ALLOWED: Record<Kind, Comparator[]> = {
  uuid: ['eq', 'neq', 'in'],
  text: ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'in'],
  time: ['eq', 'neq', 'gt', 'gte', 'lt', 'lte'],
  number: ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in'],
  latency: ['eq', 'neq', 'gt', 'gte', 'lt', 'lte'],
  boolean: ['eq', 'neq'],
  tags: ['eq', 'neq', 'has', 'like', 'in'],
  json: ['like'],
  pairKey: ['eq', 'neq', 'like', 'in'],
  pairValue: ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'in'],
};

const grammar = readFileSync(new URL('./filter.peggy', import.meta.url), 'utf8');
const parser = peggy.generate(grammar, { output: 'parser' });
const fieldNames = new Set(Object.keys(FILTER_FIELDS));

export type FilterErrorDetails = { position: number; line: number; column: number; expected: string[] };

/** A malformed or ill-typed filter: BAD_REQUEST whose message names the position and what was expected. */
export class FilterError extends AppError {
  constructor(
    readonly reason: string,
    readonly position: FilterErrorDetails,
  ) {
    super('BAD_REQUEST', `Invalid filter at position ${position.position} (line ${position.line}, column ${position.column}): ${reason}`, position);
    this.name = 'FilterError';
  }
}

const errorAt = (loc: Loc, reason: string, expected: string[] = []) =>
  new FilterError(reason, { position: loc.start.offset, line: loc.start.line, column: loc.start.column, expected });

/** Parses a filter into its AST. Throws FilterError with the position of the first problem. */
export function parseFilter(text: string): FilterNode {
  try {
    return parser.parse(text, { fields: fieldNames }) as FilterNode;
  } catch (error) {
    if (error instanceof parser.SyntaxError) {
      const expected = [...new Set((error.expected ?? []).filter((e) => (e as { description?: string }).description !== 'whitespace').map((e) => describeExpectation(e)))];
      const found = error.found === null || error.found === undefined ? 'end of input' : JSON.stringify(error.found);
      // Semantic errors raised by grammar actions (unknown field) carry no expectations.
      const reason = expected.length ? `expected ${expected.join(', ')} but found ${found}` : error.message;
      throw errorAt(error.location as Loc, reason, expected);
    }
    throw error;
  }
}

function describeExpectation(expectation: { type: string; text?: string; description?: string }): string {
  if (expectation.type === 'literal') return JSON.stringify(expectation.text);
  if (expectation.type === 'end') return 'end of input';
  return expectation.description ?? expectation.type;
}

/** Collects bind parameters; placeholders are $n in the order values are added. */
export class SqlParams {
  readonly values: unknown[];
  constructor(initial: unknown[] = []) {
    this.values = [...initial];
  }
  add(value: unknown, cast?: string): string {
    this.values.push(value);
    return `$${this.values.length}${cast ? `::${cast}` : ''}`;
  }
  /**
   * A text written into the statement as a literal rather than bound: for a value whose frequency
   * decides the plan. A recurring statement is prepared and may be given a generic plan, which cannot
   * see a bound value: for has(tags, …) it then guessed every tag rare and bitmap-scanned and sorted
   * all of a partition's matches of a common one (9.7 ms at 10M runs, against 5 ms walking the
   * project's index, which it chooses when it sees the tag).
   */
  literal(text: string): string {
    return escapeLiteral(text);
  }
}

/**
 * Compiles a filter to a SQL boolean expression over `alias` (a trace_runs row), adding bind values to
 * `params`. Throws FilterError for parse errors and for a comparator or value that does not fit the field.
 */
export function compileFilter(text: string, alias: string, params: SqlParams): string {
  return compileNode(parseFilter(text), alias, params);
}

/** Parses and type-checks a filter without producing SQL (POST /runs/query/validate). */
export function validateFilter(text: string): void {
  compileFilter(text, 'r', new SqlParams());
}

function compileNode(node: FilterNode, alias: string, params: SqlParams): string {
  switch (node.type) {
    case 'and':
      return joinAll(compileAndArgs(node.args, alias, params), 'AND');
    case 'or':
      return joinAll(node.args.map((arg) => compileNode(arg, alias, params)), 'OR');
    case 'not':
      return `(NOT COALESCE(${compileNode(node.arg, alias, params)}, false))`;
    case 'exists':
      return compileExists(node.field, alias);
    case 'search':
      return compileSearch(node.field, node.value, alias, params);
    case 'cmp':
      return compileComparison(node, alias, params);
  }
}

const joinAll = (parts: string[], op: 'AND' | 'OR') => (parts.length === 1 ? parts[0]! : `(${parts.join(` ${op} `)})`);

/** and(): binds the n-th *_key comparison to the n-th value comparison of the same family. */
function compileAndArgs(args: FilterNode[], alias: string, params: SqlParams): string[] {
  const keys = new Map<Family, Extract<FilterNode, { type: 'cmp' }>[]>();
  const values = new Map<Family, Extract<FilterNode, { type: 'cmp' }>[]>();
  for (const arg of args) {
    if (arg.type !== 'cmp') continue;
    const def = FILTER_FIELDS[arg.field.name]!;
    if (!def.family) continue;
    const bucket = def.kind === 'pairKey' ? keys : values;
    bucket.set(def.family, [...(bucket.get(def.family) ?? []), arg]);
  }
  const bound = new Map<FilterNode, FilterNode>();
  for (const [family, keyNodes] of keys) {
    const valueNodes = values.get(family) ?? [];
    keyNodes.forEach((keyNode, i) => {
      const valueNode = valueNodes[i];
      if (!valueNode) return;
      bound.set(keyNode, valueNode);
      bound.set(valueNode, keyNode);
    });
  }
  const out: string[] = [];
  const done = new Set<FilterNode>();
  for (const arg of args) {
    if (done.has(arg)) continue;
    const partner = bound.get(arg);
    if (partner && arg.type === 'cmp' && partner.type === 'cmp') {
      const [keyNode, valueNode] = FILTER_FIELDS[arg.field.name]!.kind === 'pairKey' ? [arg, partner] : [partner, arg];
      out.push(compilePair(keyNode, valueNode, alias, params));
      done.add(partner);
    } else {
      out.push(compileNode(arg, alias, params));
    }
    done.add(arg);
  }
  return out;
}

function fieldDef(field: FieldRef): FieldDef {
  return FILTER_FIELDS[field.name]!;
}

function compileExists(field: FieldRef, alias: string): string {
  const def = fieldDef(field);
  switch (def.kind) {
    case 'tags':
      return `(cardinality(${def.column(alias)}) > 0)`;
    case 'pairKey':
    case 'pairValue':
      return `(jsonb_typeof(${def.column(alias)}) = 'object' AND ${def.column(alias)} <> '{}'::jsonb)`;
    default:
      return `(${def.column(alias)} IS NOT NULL)`;
  }
}

const SEARCHABLE: Record<string, (alias: string) => string> = {
  name: (a) => `${a}.name`,
  error: (a) => `${a}.error`,
  inputs: (a) => `${a}.inputs::text`,
  outputs: (a) => `${a}.outputs::text`,
  run_type: (a) => `${a}.run_type`,
  thread_id: (a) => `${a}.thread_id`,
  metadata_value: (a) => `(${a}.extra->'metadata')::text`,
};

function compileSearch(field: FieldRef | null, value: FilterValue, alias: string, params: SqlParams): string {
  if (value.kind !== 'string' && value.kind !== 'number') throw errorAt(value.loc, 'search expects a string');
  const pattern = params.add(`%${escapeLike(String(value.value))}%`);
  if (field) {
    const column = SEARCHABLE[field.name];
    if (!column) throw errorAt(field.loc, `search does not apply to ${field.name}`, Object.keys(SEARCHABLE));
    return `(${column(alias)} ILIKE ${pattern})`;
  }
  return `(${['name', 'error', 'inputs', 'outputs'].map((name) => `${SEARCHABLE[name]!(alias)} ILIKE ${pattern}`).join(' OR ')})`;
}

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

const SQL_OP: Record<'eq' | 'gt' | 'gte' | 'lt' | 'lte', string> = { eq: '=', gt: '>', gte: '>=', lt: '<', lte: '<=' };

function compileComparison(node: Extract<FilterNode, { type: 'cmp' }>, alias: string, params: SqlParams): string {
  const def = fieldDef(node.field);
  if (!ALLOWED[def.kind].includes(node.op)) {
    throw errorAt(node.loc, `${node.op} does not apply to ${node.field.name}`, ALLOWED[def.kind]);
  }
  if (def.kind === 'pairKey' || def.kind === 'pairValue') {
    return def.kind === 'pairKey' ? compilePair(node, undefined, alias, params) : compilePair(undefined, node, alias, params);
  }
  const column = def.column(alias);
  const { op, value } = node;

  if (op === 'in') {
    if (value.kind !== 'list' || value.value.length === 0) throw errorAt(value.loc, 'in expects a non-empty list');
    if (def.kind === 'tags') return `(${column} && ARRAY[${value.value.map((v) => params.literal(scalarText(v))).join(', ')}]::text[])`;
    const cast = def.kind === 'uuid' ? 'uuid[]' : def.kind === 'number' ? 'float8[]' : 'text[]';
    return `(${column} = ANY(${params.add(value.value.map((v) => typedScalar(def, v)), cast)}))`;
  }
  if (value.kind === 'list') throw errorAt(value.loc, 'a list is only allowed with in');

  if (def.kind === 'tags') {
    const tag = params.literal(scalarText(value));
    if (op === 'like') return `EXISTS (SELECT 1 FROM unnest(${column}) AS tag WHERE tag LIKE ${tag})`;
    // Containment (@>) rather than = ANY, so the GIN index on tags serves it.
    return op === 'neq' ? `(NOT (${column} @> ARRAY[${tag}]))` : `(${column} @> ARRAY[${tag}])`;
  }

  if (value.kind === 'null') {
    if (op === 'eq') return `(${column} IS NULL)`;
    if (op === 'neq') return `(${column} IS NOT NULL)`;
    throw errorAt(value.loc, `null only compares with eq or neq`);
  }
  // error is text, but eq(error, true|false) reads naturally: "has an error".
  if (node.field.name === 'error' && value.kind === 'boolean' && (op === 'eq' || op === 'neq')) {
    return (op === 'eq') === value.value ? `(${column} IS NOT NULL)` : `(${column} IS NULL)`;
  }
  if (op === 'like') return `(${column} LIKE ${params.add(scalarText(value))})`;
  const placeholder = params.add(typedScalar(def, value), castOf(def.kind));
  if (op === 'neq') return `(${column} IS DISTINCT FROM ${placeholder})`;
  return `(${column} ${SQL_OP[op as keyof typeof SQL_OP]} ${placeholder})`;
}

function castOf(kind: Kind): string {
  switch (kind) {
    case 'uuid':
      return 'uuid';
    case 'time':
      return 'timestamptz';
    case 'number':
    case 'latency':
      return 'float8';
    case 'boolean':
      return 'boolean';
    default:
      return 'text';
  }
}

/** A scalar value checked against the field's type, as the value to bind. */
function typedScalar(def: FieldDef, value: FilterValue): unknown {
  switch (def.kind) {
    case 'uuid':
      if ((value.kind === 'string' || value.kind === 'datetime') && isUuid(value.value)) return value.value;
      throw errorAt(value.loc, 'expected a UUID string', ['a UUID string']);
    case 'time': {
      if (value.kind === 'datetime' || value.kind === 'string') {
        const text = String(value.value);
        const iso = /[zZ]|[+-]\d\d:?\d\d$/.test(text.slice(10)) || text.length === 10 ? text : `${text}Z`;
        const millis = Date.parse(iso);
        if (/^\d{4}-\d\d-\d\d/.test(text) && !Number.isNaN(millis) && new Date(millis).getUTCFullYear() < 10000) return iso;
      }
      throw errorAt(value.loc, 'expected an ISO 8601 date', ['an ISO 8601 date']);
    }
    case 'number':
      if (value.kind === 'number') return value.value;
      throw errorAt(value.loc, 'expected a number', ['a number']);
    case 'latency': {
      if (value.kind === 'number') return value.value;
      const seconds = value.kind === 'duration' || value.kind === 'string' ? durationSeconds(String(value.value)) : undefined;
      if (seconds !== undefined) return seconds;
      throw errorAt(value.loc, 'expected a number of seconds or a duration such as "2.5s"', ['a number', 'a duration']);
    }
    case 'boolean':
      if (value.kind === 'boolean') return value.value;
      throw errorAt(value.loc, 'expected true or false', ['true', 'false']);
    default:
      if (value.kind === 'string' || value.kind === 'datetime' || value.kind === 'duration') return String(value.value);
      if (value.kind === 'number' || value.kind === 'boolean') return String(value.value);
      throw errorAt(value.loc, 'expected a string');
  }
}

function scalarText(value: FilterValue): string {
  if (value.kind === 'list' || value.kind === 'null') throw errorAt(value.loc, 'expected a string');
  return String(value.value);
}

const DURATION_UNITS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };

function durationSeconds(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(text);
  return match ? Number(match[1]) * DURATION_UNITS[match[2]!]! : undefined;
}

/**
 * A key/value family comparison: EXISTS over the entries of the JSON object, with the key and value
 * conditions on the same entry when both are given.
 */
function compilePair(
  keyNode: Extract<FilterNode, { type: 'cmp' }> | undefined,
  valueNode: Extract<FilterNode, { type: 'cmp' }> | undefined,
  alias: string,
  params: SqlParams,
): string {
  const def = fieldDef((keyNode ?? valueNode)!.field);
  const family = def.family!;
  const source = FAMILY_SOURCE[family](alias);
  // neq alone means "no entry equals": NOT EXISTS of the eq. Inside a bound pair it narrows that entry.
  const negate = (keyNode?.op === 'neq' && !valueNode) || (valueNode?.op === 'neq' && !keyNode);
  const asEq = (node: typeof keyNode) => (node && negate ? { ...node, op: 'eq' as const } : node);
  const key = asEq(keyNode);
  const value = asEq(valueNode);
  const conditions: string[] = [];
  if (key) {
    if (!ALLOWED.pairKey.includes(key.op)) throw errorAt(key.loc, `${key.op} does not apply to ${key.field.name}`, ALLOWED.pairKey);
    conditions.push(textCondition('kv.key', key, params));
  }
  if (value) {
    if (!ALLOWED.pairValue.includes(value.op)) throw errorAt(value.loc, `${value.op} does not apply to ${value.field.name}`, ALLOWED.pairValue);
    if (family === 'feedback') {
      conditions.push(numericCondition(`(kv.value->>'avg')::float8`, value, params));
    } else if (value.value.kind === 'number' && value.op !== 'eq' && value.op !== 'neq' && value.op !== 'like' && value.op !== 'in') {
      // Ordered comparison with a number: only numeric entries take part.
      conditions.push(`(jsonb_typeof(kv.value) = 'number' AND ${numericCondition('(kv.value)::float8', value, params)})`);
    } else {
      conditions.push(textCondition(`(kv.value #>> '{}')`, value, params));
    }
  }
  const entries = `jsonb_each(CASE WHEN jsonb_typeof(${source}) = 'object' THEN ${source} END) AS kv(key, value)`;
  const exists = `EXISTS (SELECT 1 FROM ${entries} WHERE ${conditions.join(' AND ')})`;
  if (negate) return `(NOT ${exists})`;
  const contained = family === 'metadata' && key && value ? metadataContainment(alias, key, value, params) : undefined;
  return contained ? `(${contained} AND ${exists})` : `(${exists})`;
}

/**
 * eq(metadata_key, k) with eq(metadata_value, v) as `extra @> {"metadata": {k: v}}`, which the GIN index
 * on extra serves; the EXISTS beside it keeps the exact semantics. Only when v cannot be the text of a
 * non-string JSON value (a number, true, an object …): then the entry must be the JSON string v, and
 * containment matches exactly those rows.
 */
function metadataContainment(
  alias: string,
  key: Extract<FilterNode, { type: 'cmp' }>,
  value: Extract<FilterNode, { type: 'cmp' }>,
  params: SqlParams,
): string | undefined {
  if (key.op !== 'eq' || value.op !== 'eq' || key.value.kind !== 'string' || value.value.kind !== 'string') return undefined;
  try {
    JSON.parse(value.value.value);
    return undefined; // "7", "true", "[1]": a number, boolean or structure could match too
  } catch {
    return `${alias}.extra @> ${params.add(JSON.stringify({ metadata: { [key.value.value]: value.value.value } }), 'jsonb')}`;
  }
}

function textCondition(expression: string, node: Extract<FilterNode, { type: 'cmp' }>, params: SqlParams): string {
  const { op, value } = node;
  if (op === 'in') {
    if (value.kind !== 'list' || value.value.length === 0) throw errorAt(value.loc, 'in expects a non-empty list');
    return `${expression} = ANY(${params.add(value.value.map((v) => scalarText(v)), 'text[]')})`;
  }
  if (value.kind === 'list') throw errorAt(value.loc, 'a list is only allowed with in');
  if (value.kind === 'null') {
    if (op === 'eq') return `(${expression} IS NULL)`;
    if (op === 'neq') return `(${expression} IS NOT NULL)`;
    throw errorAt(value.loc, 'null only compares with eq or neq');
  }
  const placeholder = params.add(scalarText(value));
  if (op === 'like') return `${expression} LIKE ${placeholder}`;
  if (op === 'neq') return `${expression} IS DISTINCT FROM ${placeholder}`;
  return `${expression} ${SQL_OP[op as keyof typeof SQL_OP]} ${placeholder}`;
}

function numericCondition(expression: string, node: Extract<FilterNode, { type: 'cmp' }>, params: SqlParams): string {
  const { op, value } = node;
  if (op === 'in') {
    if (value.kind !== 'list' || value.value.length === 0 || value.value.some((v) => v.kind !== 'number')) {
      throw errorAt(value.loc, 'in expects a non-empty list of numbers');
    }
    return `${expression} = ANY(${params.add(value.value.map((v) => v.value), 'float8[]')})`;
  }
  if (value.kind !== 'number') throw errorAt(value.loc, 'expected a number', ['a number']);
  if (op === 'like') throw errorAt(node.loc, `like does not apply to ${node.field.name}`);
  const placeholder = params.add(value.value, 'float8');
  if (op === 'neq') return `${expression} IS DISTINCT FROM ${placeholder}`;
  return `${expression} ${SQL_OP[op as keyof typeof SQL_OP]} ${placeholder}`;
}
