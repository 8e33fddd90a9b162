// Validation of the runs ingest receives: run creates and updates as the langsmith SDK sends them
// (snake_case; see the contract in ingest.service.ts), checked by hand rather than with zod because
// this is the hot path (every run of every batch), into the NormalizedRun and NormalizedPatch the
// service stores, with the fields derived from them (derive.ts). A malformed run is VALIDATION_FAILED
// with a `loc` like ["post", 3, "start_time"].
import { isUuid, newId } from '../../ids.js';
import { RUN_TYPES } from '../services/traces/traces.schemas.js';
import {
  deriveFirstTokenTime,
  deriveThreadId,
  deriveUsage,
  dottedOrderIds,
  invalid,
  jsonValue,
  normalizeTimestamp,
  toJsonb,
  toJsonbValue,
  toText,
} from './derive.js';
import type { NormalizedPatch, NormalizedRun } from './ingest-types.js';

const RUN_TYPE_SET = new Set<string>(RUN_TYPES);

const asRecord = (value: unknown): Record<string, unknown> | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

// A field's place is passed as the run's `loc` and the field's name, joined only for an error: every
// run of every batch goes through these, and a location array per field was most of their garbage.
type Loc = (string | number)[];

function optionalUuid(value: unknown, loc: Loc, field: string): string | null {
  if (value === undefined || value === null) return null;
  if (!isUuid(value)) throw invalid(at(loc, field), 'expected a UUID', 'uuid_parsing');
  return value.toLowerCase();
}

function optionalString(value: unknown, loc: Loc, field: string, max: number): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw invalid(at(loc, field), 'expected a string', 'string_type');
  return toText(value, max);
}

function tagList(value: unknown, loc: Loc, field: string): string[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value)) throw invalid(at(loc, field), 'expected a list of strings', 'list_type');
  const tags: string[] = [];
  for (let i = 0; i < value.length && i < 1000; i++) tags.push(toText(typeof value[i] === 'string' ? value[i] : String(value[i]), 1000) ?? '');
  return tags;
}

/** A run patch's JSON field, as text for the statement. */
const jsonField = (value: unknown, loc: Loc, field: string) => toJsonField(value, loc, field, toJsonb);
/** A run create's JSON field: raw JSON from the wire stays the bytes it came as (toJsonbValue). */
const jsonColumn = (value: unknown, loc: Loc, field: string) => toJsonField(value, loc, field, toJsonbValue);

function toJsonField<T>(value: unknown, loc: Loc, field: string, encode: (value: unknown) => T): T | null {
  if (value === undefined || value === null) return null;
  try {
    return encode(value);
  } catch {
    throw invalid(at(loc, field), 'is not serialisable as JSON');
  }
}

function errorText(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  return toText(typeof value === 'string' ? value : JSON.stringify(value));
}

// Module-level rather than a closure per run: tsx (esbuild keepNames) names every closure it creates.
const at = (loc: Loc, field: string) => [...loc, field];

/** Validates a run create and computes its derived fields (hierarchy may still need its parent). */
export function normalizeRunCreate(raw: unknown, loc: (string | number)[]): NormalizedRun {
  const run = asRecord(raw);
  if (!run) throw invalid(loc, 'expected a run object', 'dict_type');
  let id = run.id === undefined || run.id === null ? newId() : optionalUuid(run.id, loc, 'id')!;
  const name = optionalString(run.name, loc, 'name', 2000);
  if (!name) throw invalid(at(loc, 'name'), 'Field required', 'missing');
  if (typeof run.run_type !== 'string' || !RUN_TYPE_SET.has(run.run_type)) {
    throw invalid(at(loc, 'run_type'), `expected one of ${RUN_TYPES.join(', ')}`, 'enum');
  }
  const startTime = run.start_time === undefined || run.start_time === null ? new Date().toISOString() : normalizeTimestamp(run.start_time, loc, 'start_time');
  const endTime = run.end_time === undefined || run.end_time === null ? null : normalizeTimestamp(run.end_time, loc, 'end_time');
  let parentRunId = optionalUuid(run.parent_run_id, loc, 'parent_run_id');
  let traceId = optionalUuid(run.trace_id, loc, 'trace_id');
  let dottedOrder: string | null = null;
  let parentRunIds: string[] = [];
  if (run.dotted_order !== undefined && run.dotted_order !== null) {
    if (typeof run.dotted_order !== 'string' || run.dotted_order.length > 10_000) throw invalid(at(loc, 'dotted_order'), 'expected a string', 'string_type');
    const ids = dottedOrderIds(run.dotted_order);
    if (!ids) throw invalid(at(loc, 'dotted_order'), 'expected segments like 20240101T000000000000Z<run id> joined by "."');
    if (ids[ids.length - 1] !== id) throw invalid(at(loc, 'dotted_order'), 'must end with the run id');
    // The same id, as the dotted order's text (kept anyway): a multipart run's id is a slice of its
    // part's header block, which the run would otherwise hold on to while it waits for its INSERT.
    id = ids[ids.length - 1]!;
    if (traceId && traceId !== ids[0]) throw invalid(at(loc, 'trace_id'), 'must be the first run id of dotted_order');
    dottedOrder = run.dotted_order;
    traceId = ids[0]!;
    parentRunIds = ids.slice(0, -1);
    parentRunId ??= parentRunIds[parentRunIds.length - 1] ?? null;
  }
  const sessionId = optionalUuid(run.session_id, loc, 'session_id');
  const sessionName = sessionId ? null : optionalString(run.session_name, loc, 'session_name', 500)?.trim() || null;
  // extra is parsed for the metadata derived fields read, but stored as sent when it came as text.
  const extraValue = jsonValue(run.extra, loc, 'extra');
  const extra = asRecord(extraValue) ?? null;
  if (extraValue !== undefined && extraValue !== null && !extra) throw invalid(at(loc, 'extra'), 'expected an object', 'dict_type');
  return {
    id,
    sessionId,
    sessionName,
    traceId,
    parentRunId,
    parentRunIds,
    referenceExampleId: optionalUuid(run.reference_example_id, loc, 'reference_example_id'),
    name,
    runType: run.run_type,
    startTime,
    endTime,
    dottedOrder,
    traceTier: optionalString(run.trace_tier, loc, 'trace_tier', 100),
    inputs: jsonColumn(run.inputs, loc, 'inputs'),
    outputs: jsonColumn(run.outputs, loc, 'outputs'),
    error: errorText(run.error),
    extra: jsonColumn(extra ? run.extra : null, loc, 'extra'),
    events: jsonColumn(run.events, loc, 'events'),
    serialized: jsonColumn(run.serialized, loc, 'serialized'),
    tags: tagList(run.tags, loc, 'tags') ?? [],
    usage: deriveUsage(run.run_type, run.run_type === 'llm' ? jsonValue(run.outputs, loc, 'outputs') : undefined, extra),
    firstTokenTime: deriveFirstTokenTime(jsonValue(run.events, loc, 'events', 'new_token')),
    threadId: deriveThreadId(extra),
  };
}

/** Validates a run update (`id`: the run it patches, when the path names it rather than the body). */
export function normalizePatch(raw: unknown, loc: (string | number)[], id?: string): NormalizedPatch {
  const patch = asRecord(raw);
  if (!patch) throw invalid(loc, 'expected a run update object', 'dict_type');
  const runId = id ?? optionalUuid(patch.id, loc, 'id');
  if (!runId) throw invalid(at(loc, 'id'), 'Field required', 'missing');
  // extra is parsed for the metadata derived fields read, but stored as sent when it came as text.
  const extraValue = jsonValue(patch.extra, loc, 'extra');
  const extra = asRecord(extraValue) ?? null;
  if (extraValue !== undefined && extraValue !== null && !extra) throw invalid(at(loc, 'extra'), 'expected an object', 'dict_type');
  return {
    id: runId.toLowerCase(),
    endTime: patch.end_time === undefined || patch.end_time === null ? null : normalizeTimestamp(patch.end_time, loc, 'end_time'),
    inputs: jsonField(patch.inputs, loc, 'inputs'),
    outputs: jsonField(patch.outputs, loc, 'outputs'),
    error: errorText(patch.error),
    extra: jsonField(extra ? patch.extra : null, loc, 'extra'),
    events: jsonField(patch.events, loc, 'events'),
    serialized: jsonField(patch.serialized, loc, 'serialized'),
    tags: tagList(patch.tags, loc, 'tags'),
    // The run type is not on the wire of a patch; the UPDATE applies usage only to LLM runs.
    usage: deriveUsage(undefined, jsonValue(patch.outputs, loc, 'outputs', 'token'), extra),
    firstTokenTime: deriveFirstTokenTime(jsonValue(patch.events, loc, 'events', 'new_token')),
    threadId: deriveThreadId(extra),
    raw: { ...patch, id: runId.toLowerCase() },
  };
}
