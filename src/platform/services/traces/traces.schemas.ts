// Input schemas of the traces area (projects and run queries), shared by REST and GraphQL. Run payloads
// themselves are normalised by hand in platform/ingest/ingest.schemas.ts: that path is hot (10k+ runs/s) and needs
// locations like `post[3].start_time` that match the wire.
import { z } from 'zod';

const projectName = z.string().trim().min(1, 'must not be empty').max(500);
const timestamp = z.union([z.iso.datetime({ offset: true, local: true }), z.iso.date()]).transform((value) => new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(value.slice(10)) || value.length === 10 ? value : `${value}Z`));
const jsonObject = z.record(z.string(), z.unknown());

export const ProjectCreate = z.object({
  name: projectName,
  description: z.string().max(10_000).nullish(),
  extra: jsonObject.nullish(),
  referenceDatasetId: z.uuid().nullish(),
  startTime: timestamp.nullish(),
  endTime: timestamp.nullish(),
  /** Return the existing project of that name instead of failing with CONFLICT (updating given fields). */
  upsert: z.boolean().default(false),
});
export type ProjectCreateInput = z.input<typeof ProjectCreate>;

export const ProjectUpdate = z.object({
  name: projectName.nullish(),
  description: z.string().max(10_000).nullish(),
  extra: jsonObject.nullish(),
  endTime: timestamp.nullish(),
});
export type ProjectUpdateInput = z.input<typeof ProjectUpdate>;

export const ProjectList = z.object({
  ids: z.array(z.uuid()).optional(),
  name: z.string().optional(),
  nameContains: z.string().max(500).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  offset: z.coerce.number().int().min(0).default(0),
  includeStats: z.boolean().default(false),
});
export type ProjectListInput = z.input<typeof ProjectList>;

const uuidList = z.union([z.uuid(), z.array(z.uuid())]).transform((value) => (Array.isArray(value) ? value : [value]));

export const RUN_TYPES = ['tool', 'chain', 'llm', 'retriever', 'embedding', 'prompt', 'parser'] as const;

export const RunQuery = z.object({
  session: uuidList.nullish(),
  id: uuidList.nullish(),
  trace: z.uuid().nullish(),
  parentRun: z.uuid().nullish(),
  referenceExample: uuidList.nullish(),
  runType: z.enum(RUN_TYPES).nullish(),
  isRoot: z.boolean().nullish(),
  /** 1 selects root runs (the SDK's older spelling of is_root). */
  executionOrder: z.number().int().min(1).nullish(),
  error: z.boolean().nullish(),
  startTime: timestamp.nullish(),
  endTime: timestamp.nullish(),
  /** Full-text-ish search over inputs, outputs, error and name (like the filter's `search`). */
  query: z.string().max(2000).nullish(),
  filter: z.string().max(10_000).nullish(),
  traceFilter: z.string().max(10_000).nullish(),
  treeFilter: z.string().max(10_000).nullish(),
  select: z.array(z.string()).nullish(),
  order: z.enum(['asc', 'desc']).nullish(),
  cursor: z.string().max(500).nullish(),
  limit: z.number().int().min(1).max(1000).nullish(),
});
export type RunQueryInput = z.input<typeof RunQuery>;
