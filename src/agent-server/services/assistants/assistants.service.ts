// Assistants: a graph plus configuration, versioned. Each graph has a default ("system") assistant
// whose id is derived from the graph id, so a graph name works wherever an assistant id is expected.
import { withTransaction } from '../../../db.js';
import { AppError } from '../../../errors.js';
import { isUuid } from '../../../ids.js';
import { newId } from '../../../ids.js';
import { parseInput } from '../../../validate.js';
import { type SearchPage, searchPage } from '../search-page.js';
import type { AgentServerContext } from '../served-deployment/deployment-scope.js';
import { type AuthFilter, type AuthorizedContext, authorize, filterDocument, matchesFilter } from '../custom-auth/custom-auth.js';
import { openJson, sealJson } from '../encryption/at-rest.js';
import { askRuntime } from '../served-deployment/runtime-client.js';
import { defaultAssistantId } from './default-assistant-id.js';
import {
  AssistantCountRequest,
  AssistantCreate,
  AssistantLatestVersion,
  AssistantPatch,
  AssistantSearchRequest,
  AssistantVersionsRequest,
} from './assistants.schemas.js';
import type { Assistant, AssistantVersion } from '../../../contracts/agent-server-api.js';

export type { Assistant, AssistantVersion };

type Json = Record<string, unknown>;

type AssistantRow = {
  id: string;
  graph_id: string;
  name: string;
  description: string | null;
  config: Json;
  context: Json;
  metadata: Json;
  version: number;
  created_at: Date;
  updated_at: Date;
};

const field = (name: string) => ({ model: 'assistant', field: name }) as const;

// A row's JSON opened (when encrypted at rest: encryption/at-rest.ts).
const toAssistant = async (ctx: AgentServerContext, row: AssistantRow): Promise<Assistant> => ({
  assistantId: row.id,
  graphId: row.graph_id,
  name: row.name,
  description: row.description,
  config: await openJson(ctx.config, field('config'), row.config ?? {}),
  context: await openJson(ctx.config, field('context'), row.context ?? {}),
  metadata: await openJson(ctx.config, field('metadata'), row.metadata ?? {}),
  version: row.version,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

const NOT_FOUND = 'Assistant not found';

/** An assistant id as the API accepts it: a UUID, or a graph name for that graph's default assistant. */
export function resolveAssistantId(ctx: AgentServerContext, idOrGraph: string): string {
  if (ctx.deployment.graphIds.includes(idOrGraph)) return defaultAssistantId(idOrGraph);
  if (!isUuid(idOrGraph)) throw AppError.notFound(NOT_FOUND);
  return idOrGraph.toLowerCase();
}

/** An assistant's JSON as stored. */
async function sealAssistant(ctx: AgentServerContext, values: { config: Json; context: Json; metadata: Json }) {
  return {
    config: await sealJson(ctx.config, field('config'), values.config),
    context: await sealJson(ctx.config, field('context'), values.context),
    metadata: await sealJson(ctx.config, field('metadata'), values.metadata),
  };
}

async function insertAssistant(
  ctx: AgentServerContext,
  values: { id: string; graphId: string; name: string; description: string | null; config: Json; context: Json; metadata: Json },
  onConflictNothing: boolean,
): Promise<Assistant | undefined> {
  const stored = await sealAssistant(ctx, values);
  try {
    return await withTransaction(ctx.db, async (client) => {
      const { rows } = await client.query<AssistantRow>(
        `INSERT INTO agent_assistants (id, deployment_id, graph_id, name, description, config, context, metadata, version, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, now())
         ${onConflictNothing ? 'ON CONFLICT (deployment_id, id) DO NOTHING' : ''}
         RETURNING *`,
        [values.id, ctx.deployment.deploymentId, values.graphId, values.name, values.description, stored.config, stored.context, stored.metadata],
      );
      if (rows[0]) {
        await client.query(
          `INSERT INTO agent_assistant_versions (deployment_id, assistant_id, version, graph_id, name, description, config, context, metadata)
           VALUES ($8, $1, 1, $2, $3, $4, $5, $6, $7)`,
          [values.id, values.graphId, values.name, values.description, stored.config, stored.context, stored.metadata, ctx.deployment.deploymentId],
        );
      }
      return rows[0] ? await toAssistant(ctx, rows[0]) : undefined;
    });
  } catch (error) {
    if ((error as { code?: string }).code === '23505') throw AppError.conflict('Assistant already exists');
    throw error;
  }
}

/**
 * Creates the default assistant of every graph the deployment serves (metadata.created_by "system",
 * name = graph id) unless it exists. `graphConfig` holds per-graph config/context (LANGGRAPH_CONFIG).
 */
export async function ensureSystemAssistants(ctx: AgentServerContext, graphConfig: Record<string, Json> = {}): Promise<void> {
  for (const graphId of ctx.deployment.graphIds) {
    const { context, ...config } = (graphConfig[graphId] ?? {}) as Json & { context?: Json };
    await insertAssistant(
      ctx,
      {
        id: defaultAssistantId(graphId),
        graphId,
        name: graphId,
        description: null,
        config,
        context: context ?? {},
        metadata: { created_by: 'system' },
      },
      true,
    );
  }
}

/** Creates an assistant. NOT_FOUND for a graph this deployment does not serve; CONFLICT when the id exists (unless if_exists=do_nothing). */
export async function createAssistant(ctx: AuthorizedContext, input: unknown): Promise<Assistant> {
  const body = parseInput(AssistantCreate, input, 'body');
  if (!ctx.deployment.graphIds.includes(body.graph_id)) throw AppError.notFound(`Graph "${body.graph_id}" not found`);
  const id = body.assistant_id?.toLowerCase() ?? newId();
  // The project's handler may refuse, or change the metadata (typically: stamp the owner on it).
  const asked = { ...body, assistant_id: id, metadata: { ...(body.metadata ?? {}) } };
  const filter = await authorize(ctx, 'assistants', 'create', asked);
  if (body.assistant_id) {
    const existing = await findAssistant(ctx, id);
    if (existing) {
      if (body.if_exists === 'do_nothing' && matchesFilter(existing.metadata, filter)) return existing;
      throw AppError.conflict('Assistant already exists');
    }
  }
  const created = await insertAssistant(
    ctx,
    {
      id,
      graphId: body.graph_id,
      name: body.name ?? 'Untitled',
      description: body.description ?? null,
      config: body.config ?? {},
      context: body.context ?? {},
      metadata: asked.metadata ?? {},
    },
    body.if_exists === 'do_nothing',
  );
  return created ?? (await getAssistant(ctx, id));
}

async function findAssistant(ctx: AgentServerContext, assistantId: string): Promise<Assistant | undefined> {
  const { rows } = await ctx.db.pool.query<AssistantRow>('SELECT * FROM agent_assistants WHERE id = $1 AND deployment_id = $2', [
    assistantId,
    ctx.deployment.deploymentId,
  ]);
  return rows[0] ? await toAssistant(ctx, rows[0]) : undefined;
}

/**
 * One assistant by id or graph name; NOT_FOUND otherwise (also when the caller's custom-auth handler
 * of `assistants:<action>` filters it out; FORBIDDEN when it refuses the action).
 */
export async function getAssistant(ctx: AuthorizedContext, idOrGraph: string, action: 'read' | 'update' | 'delete' = 'read', value: Json = {}): Promise<Assistant> {
  const assistantId = resolveAssistantId(ctx, idOrGraph);
  // The handler gets the caller's own object, so what it changes there (a stamped metadata) is what the
  // caller stores; a copy lost it (the Agent Server's advisory "auth mutations not applied").
  const filter = await authorize(ctx, 'assistants', action, Object.assign(value, { assistant_id: assistantId }));
  const assistant = await findAssistant(ctx, assistantId);
  if (!assistant || !matchesFilter(assistant.metadata, filter)) throw AppError.notFound(NOT_FOUND);
  return assistant;
}

function filters(ctx: AgentServerContext, query: { metadata?: Json | null; graph_id?: string | null; name?: string | null }, authFilter?: AuthFilter) {
  const where = ['deployment_id = $1'];
  const params: unknown[] = [ctx.deployment.deploymentId];
  if (query.metadata && Object.keys(query.metadata).length) {
    params.push(JSON.stringify(query.metadata));
    where.push(`metadata @> $${params.length}::jsonb`);
  }
  if (query.graph_id) {
    params.push(query.graph_id);
    where.push(`graph_id = $${params.length}`);
  }
  if (query.name) {
    params.push(`%${query.name.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    where.push(`name ILIKE $${params.length}`);
  }
  const owned = filterDocument(authFilter);
  if (owned) {
    params.push(owned);
    where.push(`metadata @> $${params.length}::jsonb`);
  }
  return { where: where.join(' AND '), params };
}

/** Assistants matching metadata (containment), graph id and a name substring; with the total count. */
export async function searchAssistants(ctx: AuthorizedContext, input: unknown): Promise<SearchPage<Assistant>> {
  const query = parseInput(AssistantSearchRequest, input, 'body');
  const authFilter = await authorize(ctx, 'assistants', 'search', { ...query });
  const { where, params } = filters(ctx, query, authFilter);
  const column = query.sort_by === 'assistant_id' ? 'id' : (query.sort_by ?? 'created_at');
  const order = query.sort_order === 'asc' ? 'ASC' : 'DESC';
  const { rows } = await ctx.db.pool.query<AssistantRow & { total: string }>(
    `SELECT *, count(*) OVER () AS total FROM agent_assistants WHERE ${where}
     ORDER BY ${column} ${order}, id ${order} LIMIT ${query.limit} OFFSET ${query.offset}`,
    params,
  );
  const total = rows[0] ? Number(rows[0].total) : query.offset > 0 ? await countAssistants(ctx, query, authFilter) : 0;
  return searchPage(await Promise.all(rows.map((row) => toAssistant(ctx, row))), total, query);
}

/** How many assistants match the filters. */
export async function countAssistants(ctx: AuthorizedContext, input: unknown, searched?: AuthFilter): Promise<number> {
  const query = parseInput(AssistantCountRequest, input, 'body');
  const authFilter = searched ?? (await authorize(ctx, 'assistants', 'search', { ...query, limit: 0, offset: 0 }));
  const { where, params } = filters(ctx, query, authFilter);
  const { rows } = await ctx.db.pool.query<{ count: string }>(`SELECT count(*) FROM agent_assistants WHERE ${where}`, params);
  return Number(rows[0]!.count);
}

/**
 * Makes a new version from the supplied fields and activates it: `config` and `context` given replace
 * the previous ones, left out they are kept; `metadata` is merged. NOT_FOUND for an unknown assistant
 * or graph.
 */
export async function updateAssistant(ctx: AuthorizedContext, idOrGraph: string, input: unknown): Promise<Assistant> {
  const body = parseInput(AssistantPatch, input, 'body');
  const asked = { ...body, metadata: body.metadata ? { ...body.metadata } : body.metadata };
  const found = await getAssistant(ctx, idOrGraph, 'update', asked);
  const graphId = body.graph_id ?? found.graphId;
  if (!ctx.deployment.graphIds.includes(graphId)) throw AppError.notFound(`Graph "${graphId}" not found`);
  return withTransaction(ctx.db, async (client) => {
    // The assistant's row, locked: concurrent updates make one version each, in turn, each from the
    // one before (its metadata merged into theirs), instead of two taking the same version number.
    const { rows: locked } = await client.query<AssistantRow>('SELECT * FROM agent_assistants WHERE id = $1 AND deployment_id = $2 FOR UPDATE', [
      found.assistantId,
      ctx.deployment.deploymentId,
    ]);
    if (!locked[0]) throw AppError.notFound(NOT_FOUND);
    const current = await toAssistant(ctx, locked[0]);
    const next = {
      graphId,
      name: body.name ?? current.name,
      description: body.description !== undefined ? body.description : current.description,
      config: body.config ?? current.config,
      context: body.context ?? current.context,
      metadata: { ...current.metadata, ...((asked.metadata as Json | null | undefined) ?? {}) },
    };
    const { rows: versionRows } = await client.query<{ version: number }>(
      'SELECT coalesce(max(version), 0) + 1 AS version FROM agent_assistant_versions WHERE deployment_id = $2 AND assistant_id = $1',
      [current.assistantId, ctx.deployment.deploymentId],
    );
    const version = versionRows[0]!.version;
    const stored = await sealAssistant(ctx, next);
    await client.query(
      `INSERT INTO agent_assistant_versions (deployment_id, assistant_id, version, graph_id, name, description, config, context, metadata)
       VALUES ($9, $1, $2, $3, $4, $5, $6, $7, $8)`,
      [current.assistantId, version, next.graphId, next.name, next.description, stored.config, stored.context, stored.metadata, ctx.deployment.deploymentId],
    );
    const { rows } = await client.query<AssistantRow>(
      `UPDATE agent_assistants SET graph_id = $2, name = $3, description = $4, config = $5, context = $6, metadata = $7, version = $8, updated_at = now()
       WHERE id = $1 AND deployment_id = $9 RETURNING *`,
      [current.assistantId, next.graphId, next.name, next.description, stored.config, stored.context, stored.metadata, version, ctx.deployment.deploymentId],
    );
    return await toAssistant(ctx, rows[0]!);
  });
}

/** Deletes an assistant with all its versions; with `deleteThreads`, also the threads it ran on. */
export async function deleteAssistant(ctx: AuthorizedContext, idOrGraph: string, options: { deleteThreads?: boolean } = {}): Promise<void> {
  const assistant = await getAssistant(ctx, idOrGraph, 'delete');
  await ctx.db.pool.query('DELETE FROM agent_assistants WHERE id = $1 AND deployment_id = $2', [assistant.assistantId, ctx.deployment.deploymentId]);
  if (options.deleteThreads) {
    const { deleteThreadsWhere } = await import('../threads/threads.service.js');
    await deleteThreadsWhere(ctx, { assistant_id: assistant.assistantId });
  }
}

/** Makes an existing version the active one. NOT_FOUND for an unknown assistant or version. */
export async function setLatestAssistantVersion(ctx: AuthorizedContext, idOrGraph: string, input: unknown): Promise<Assistant> {
  const { version } = parseInput(AssistantLatestVersion, input, 'body');
  const assistant = await getAssistant(ctx, idOrGraph, 'update', { version });
  const { rows } = await ctx.db.pool.query<AssistantRow>(
    `UPDATE agent_assistants a SET graph_id = v.graph_id, name = v.name, description = v.description, config = v.config,
       context = v.context, metadata = v.metadata, version = v.version, updated_at = now()
     FROM agent_assistant_versions v
     WHERE a.id = $1 AND a.deployment_id = $3 AND v.deployment_id = a.deployment_id AND v.assistant_id = a.id AND v.version = $2 RETURNING a.*`,
    [assistant.assistantId, version, ctx.deployment.deploymentId],
  );
  if (!rows[0]) throw AppError.notFound(`Assistant version ${version} not found`);
  return await toAssistant(ctx, rows[0]);
}


/** Every version of an assistant, newest first. */
export async function listAssistantVersions(ctx: AuthorizedContext, idOrGraph: string, input: unknown): Promise<AssistantVersion[]> {
  const query = parseInput(AssistantVersionsRequest, input, 'body');
  const assistant = await getAssistant(ctx, idOrGraph);
  const params: unknown[] = [assistant.assistantId, ctx.deployment.deploymentId];
  let where = 'assistant_id = $1 AND deployment_id = $2';
  if (query.metadata && Object.keys(query.metadata).length) {
    params.push(JSON.stringify(query.metadata));
    where += ` AND metadata @> $3::jsonb`;
  }
  const { rows } = await ctx.db.pool.query<Omit<AssistantRow, 'id' | 'updated_at'> & { assistant_id: string }>(
    `SELECT * FROM agent_assistant_versions WHERE ${where} ORDER BY version DESC LIMIT ${query.limit} OFFSET ${query.offset}`,
    params,
  );
  return Promise.all(rows.map(async (row) => ({ ...(await toAssistant(ctx, { ...row, id: row.assistant_id, updated_at: row.created_at })), updatedAt: undefined }) as AssistantVersion));
}

const runnableConfig = (assistant: Assistant) => ({
  ...(assistant.config as Json),
  configurable: { ...((assistant.config.configurable as Json | undefined) ?? {}) },
});

/** The drawable graph (nodes and edges) of the assistant's graph; `xray` includes subgraphs. Asked of the runtime. */
export async function getAssistantGraph(ctx: AuthorizedContext, idOrGraph: string, xray?: boolean | number): Promise<unknown> {
  const assistant = await getAssistant(ctx, idOrGraph);
  return askRuntime(ctx, { kind: 'graph-drawing', graphId: assistant.graphId, config: runnableConfig(assistant), xray });
}

/** The schemas of the assistant's graph. Asked of the runtime. */
export async function getAssistantSchemas(ctx: AuthorizedContext, idOrGraph: string): Promise<Json> {
  const assistant = await getAssistant(ctx, idOrGraph);
  return (await askRuntime(ctx, { kind: 'graph-schemas', graphId: assistant.graphId, config: runnableConfig(assistant) })) as Json;
}

/** The subgraphs of the assistant's graph by namespace (optionally below one namespace, recursively). Asked of the runtime. */
export async function getAssistantSubgraphs(
  ctx: AuthorizedContext,
  idOrGraph: string,
  options: { namespace?: string; recurse?: boolean },
): Promise<Record<string, Json>> {
  const assistant = await getAssistant(ctx, idOrGraph);
  const request = { kind: 'subgraph-schemas', graphId: assistant.graphId, config: runnableConfig(assistant), namespace: options.namespace, recurse: options.recurse } as const;
  return (await askRuntime(ctx, request)) as Record<string, Json>;
}

/** Every assistant of the deployment (GraphQL lists). */
export async function listAssistants(ctx: AuthorizedContext, options: { limit?: number; offset?: number; graphId?: string } = {}) {
  return (await searchAssistants(ctx, { limit: options.limit ?? 50, offset: options.offset ?? 0, graph_id: options.graphId })).items;
}
