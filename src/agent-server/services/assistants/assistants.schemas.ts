// Input schemas of the assistants area, named after the API nouns.
import { z } from 'zod';

const JsonObject = z.record(z.string(), z.unknown());

export const AssistantCreate = z.object({
  graph_id: z.string().min(1),
  assistant_id: z.uuid().optional(),
  config: JsonObject.nullish(),
  context: JsonObject.nullish(),
  metadata: JsonObject.nullish(),
  if_exists: z.enum(['raise', 'do_nothing']).nullish(),
  name: z.string().nullish(),
  description: z.string().nullish(),
});
export type AssistantCreate = z.infer<typeof AssistantCreate>;

export const AssistantPatch = z.object({
  graph_id: z.string().min(1).nullish(),
  config: JsonObject.nullish(),
  context: JsonObject.nullish(),
  metadata: JsonObject.nullish(),
  name: z.string().nullish(),
  description: z.string().nullish(),
});
export type AssistantPatch = z.infer<typeof AssistantPatch>;

const ASSISTANT_SORT_FIELDS = ['assistant_id', 'graph_id', 'name', 'created_at', 'updated_at'] as const;
const ASSISTANT_FIELDS = ['assistant_id', 'graph_id', 'name', 'description', 'config', 'context', 'metadata', 'version', 'created_at', 'updated_at'] as const;

export const AssistantSearchRequest = z.object({
  metadata: JsonObject.nullish(),
  graph_id: z.string().nullish(),
  name: z.string().nullish(),
  limit: z.coerce.number().int().min(1).max(1000).default(10),
  offset: z.coerce.number().int().min(0).default(0),
  sort_by: z.enum(ASSISTANT_SORT_FIELDS).nullish(),
  sort_order: z.enum(['asc', 'desc']).nullish(),
  select: z.array(z.enum(ASSISTANT_FIELDS)).nullish(),
});
export type AssistantSearchRequest = z.input<typeof AssistantSearchRequest>;

export const AssistantCountRequest = z.object({
  metadata: JsonObject.nullish(),
  graph_id: z.string().nullish(),
  name: z.string().nullish(),
});

export const AssistantVersionsRequest = z.object({
  metadata: JsonObject.nullish(),
  limit: z.coerce.number().int().min(1).max(1000).default(10),
  offset: z.coerce.number().int().min(0).default(0),
});

export const AssistantLatestVersion = z.object({ version: z.coerce.number().int().min(1) });
