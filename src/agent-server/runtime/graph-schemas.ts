// JSON Schemas of a compiled graph (GET /assistants/{id}/schemas and /subgraphs), read from its state
// definition the way the reference server reads them at runtime:
//   1. `StateSchema` states and Zod states registered in LangGraph's schema registry, through
//      LangGraph's own helpers (`@langchain/langgraph/zod/schema`), which apply `jsonSchemaExtra`;
//   2. the same registry schemas again when a field has no JSON Schema form (a `z.custom` messages
//      field, as LangGraph's docs write it): zod renders it as `{}` and its extras still apply;
//   3. `Annotation` roots, which carry no runtime types: their channels, with messages channels
//      marked `langgraph_type: "messages"` and reducer defaults. Their types come from the TypeScript
//      source (type-schemas.ts), merged with these by withRuntimeDefaults.
//   The helpers and the registry are those of the copy of @langchain/langgraph the graph imports
//   (langGraphSchemaHelpers): a project's own node_modules holds its own registry.
import { readFileSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { toJsonSchema } from '@langchain/core/utils/json_schema';
import * as langGraph from '@langchain/langgraph';
import * as langGraphZod from '@langchain/langgraph/zod';
import * as langGraphZodSchema from '@langchain/langgraph/zod/schema';

type JsonSchema = Record<string, unknown>;

/** One graph's schemas, keyed as the reference's GraphSchema: `state`, `input`, `output`, `config`. */
export type GraphSchemas = { state?: JsonSchema; input?: JsonSchema; output?: JsonSchema; config?: JsonSchema };

type Builder = {
  _schemaRuntimeDefinition?: unknown;
  _inputRuntimeDefinition?: unknown;
  _outputRuntimeDefinition?: unknown;
  _configRuntimeSchema?: unknown;
  _inputDefinition?: unknown;
  _outputDefinition?: unknown;
  channels?: Record<string, unknown>;
};
type Effects = Parameters<typeof langGraphZod.schemaMetaRegistry.getExtendedChannelSchemas>[1];

/** What of @langchain/langgraph reads a graph's schemas: its schema helpers, its registry, its messages reducer. */
export type LangGraphSchemaHelpers = typeof langGraphZodSchema &
  Pick<typeof langGraphZod, 'schemaMetaRegistry' | 'META_EXTRAS_DESCRIPTION_PREFIX'> &
  Pick<typeof langGraph, 'messagesStateReducer'>;

const ours: LangGraphSchemaHelpers = { ...langGraphZodSchema, ...langGraphZod, messagesStateReducer: langGraph.messagesStateReducer };
const byPackage = new Map<string, Promise<LangGraphSchemaHelpers>>();

/**
 * LangGraph's schema helpers from the copy of @langchain/langgraph that `file` (a graph module)
 * imports, as ESM: `withLangGraph` and `registry` write a graph's `jsonSchemaExtra` into that copy's
 * registry, which ours cannot see. Ours when the file resolves to our copy or to none.
 */
export function langGraphSchemaHelpers(file: string): Promise<LangGraphSchemaHelpers> {
  let packageDir: string;
  try {
    packageDir = realpathSync(dirname(createRequire(file).resolve('@langchain/langgraph/package.json')));
  } catch {
    return Promise.resolve(ours);
  }
  const ourDir = realpathSync(dirname(createRequire(import.meta.url).resolve('@langchain/langgraph/package.json')));
  if (packageDir === ourDir) return Promise.resolve(ours);
  let helpers = byPackage.get(packageDir);
  if (!helpers) {
    helpers = importLangGraphCopy(packageDir).catch(() => ours);
    byPackage.set(packageDir, helpers);
  }
  return helpers;
}

async function importLangGraphCopy(packageDir: string): Promise<LangGraphSchemaHelpers> {
  const { exports } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
  // The entry an ESM import of the subpath loads: the same module instance the graph holds.
  const entry = (subpath: string) => {
    let target: unknown = exports[subpath];
    while (target && typeof target === 'object') {
      const conditions = target as Record<string, unknown>;
      target = conditions.import ?? conditions.node ?? conditions.default;
    }
    if (typeof target !== 'string') throw new Error(`@langchain/langgraph exports no ${subpath}`);
    return import(pathToFileURL(join(packageDir, target)).href);
  };
  const [root, zod, schema] = (await Promise.all([entry('.'), entry('./zod'), entry('./zod/schema')])) as [typeof langGraph, typeof langGraphZod, typeof langGraphZodSchema];
  return { ...schema, schemaMetaRegistry: zod.schemaMetaRegistry, META_EXTRAS_DESCRIPTION_PREFIX: zod.META_EXTRAS_DESCRIPTION_PREFIX, messagesStateReducer: root.messagesStateReducer };
}

// LangGraph marks an input that defaults to the state (made partial) with this symbol.
const PARTIAL_STATE = Symbol.for('langgraph.state.partial');

/** The JSON Schemas of a compiled graph's state, input, output and config; empty for a non-state graph. */
export function extractGraphSchemas(graph: unknown, helpers: LangGraphSchemaHelpers = ours): GraphSchemas {
  const builder = (graph as { builder?: Builder } | null)?.builder;
  if (!builder || typeof builder !== 'object') return {};
  if (builder._schemaRuntimeDefinition) return registrySchemas(graph, builder, helpers);
  return annotationSchemas(builder, helpers);
}

/** Whether the graph's state carries runtime types (Zod, StateSchema); if not, its TypeScript types say more. */
export const hasRuntimeTypes = (graph: unknown): boolean => !!(graph as { builder?: Builder } | null)?.builder?._schemaRuntimeDefinition;

/**
 * Schemas from TypeScript types, with what only the runtime knows added: reducers' defaults, and the
 * channels the types do not name (an `any`-typed spread, say).
 */
export function withRuntimeDefaults(fromTypes: GraphSchemas, runtime: GraphSchemas): GraphSchemas {
  const merge = (typed: JsonSchema | undefined, known: JsonSchema | undefined): JsonSchema | undefined => {
    if (!typed) return known;
    const typedProperties = (typed.properties ?? {}) as Record<string, JsonSchema>;
    const knownProperties = (known?.properties ?? {}) as Record<string, JsonSchema>;
    if (!Object.keys(knownProperties).length) return typed;
    const properties: Record<string, JsonSchema> = {};
    for (const [name, schema] of Object.entries(typedProperties)) {
      const runtimeDefault = knownProperties[name]?.default;
      properties[name] = runtimeDefault === undefined || 'default' in schema ? schema : { ...schema, default: runtimeDefault };
    }
    for (const [name, schema] of Object.entries(knownProperties)) if (!(name in properties)) properties[name] = schema;
    return { ...typed, properties };
  };
  return omitUndefined({
    state: merge(fromTypes.state, runtime.state),
    input: merge(fromTypes.input, runtime.input),
    output: merge(fromTypes.output, runtime.output),
    config: fromTypes.config ?? runtime.config,
  });
}

function registrySchemas(graph: unknown, builder: Builder, helpers: LangGraphSchemaHelpers): GraphSchemas {
  const { getConfigTypeSchema, getInputTypeSchema, getOutputTypeSchema, getStateTypeSchema, getUpdateTypeSchema } = helpers;
  const orLenient = (helper: () => unknown, definition: unknown, effects: Effects) => orLenientWith(helpers, helper, definition, effects);
  // A symbol of Symbol.for: any copy's StateSchema answers for another's.
  const stateIsStateSchema = langGraph.StateSchema.isInstance(builder._schemaRuntimeDefinition);
  const inputDefinition = builder._inputRuntimeDefinition === PARTIAL_STATE ? builder._schemaRuntimeDefinition : builder._inputRuntimeDefinition;
  const asUpdate: Effects = { withReducerSchema: true, asPartial: true };
  return omitUndefined({
    // As the reference: a StateSchema's state is its full schema, a Zod state's is its update schema.
    state: stateIsStateSchema
      ? orLenient(() => getStateTypeSchema(graph), builder._schemaRuntimeDefinition, {})
      : orLenient(() => getUpdateTypeSchema(graph), builder._schemaRuntimeDefinition, asUpdate),
    input: orLenient(() => getInputTypeSchema(graph), inputDefinition, asUpdate),
    output: orLenient(() => getOutputTypeSchema(graph), builder._outputRuntimeDefinition, {}),
    config: orLenient(() => getConfigTypeSchema(graph), builder._configRuntimeSchema, {}),
  });
}

/**
 * LangGraph's helper, or, when it throws because a field has no JSON Schema form, the same registry
 * schema rendered with such fields as `{}` (their `jsonSchemaExtra` kept).
 */
function orLenientWith(helpers: LangGraphSchemaHelpers, helper: () => unknown, definition: unknown, effects: Effects): JsonSchema | undefined {
  try {
    return (helper() as JsonSchema | undefined) ?? undefined;
  } catch {
    if (!definition || typeof definition !== 'object' || langGraph.StateSchema.isInstance(definition)) return undefined;
    try {
      const extended = helpers.schemaMetaRegistry.getExtendedChannelSchemas(definition as never, { ...effects, withJsonSchemaExtrasAsDescription: true });
      return liftJsonSchemaExtras(toJsonSchema(extended, { unrepresentable: 'any' } as never), helpers.META_EXTRAS_DESCRIPTION_PREFIX) as JsonSchema;
    } catch {
      return undefined;
    }
  }
}

/** The registry carries `jsonSchemaExtra` through zod as an `lg:{...}` description; this unfolds it. */
function liftJsonSchemaExtras(schema: unknown, prefix: string): unknown {
  if (Array.isArray(schema)) return schema.map((item) => liftJsonSchemaExtras(item, prefix));
  if (typeof schema !== 'object' || schema === null) return schema;
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) result[key] = liftJsonSchemaExtras(value, prefix);
  const description = result.description;
  if (typeof description === 'string' && description.startsWith(prefix)) {
    delete result.description;
    Object.assign(result, JSON.parse(description.slice(prefix.length)));
  }
  return result;
}

function annotationSchemas(builder: Builder, helpers: LangGraphSchemaHelpers): GraphSchemas {
  const channels = builder.channels ?? {};
  const object = (names: string[]): JsonSchema => ({
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: Object.fromEntries(names.filter((name) => name in channels).map((name) => [name, channelSchema(channels[name], helpers)])),
  });
  const state = Object.keys(channels).filter((name) => !name.startsWith('__'));
  const keysOf = (definition: unknown) =>
    definition && typeof definition === 'object' ? Object.keys((definition as { spec?: object }).spec ?? definition) : state;
  // No runtime config schema either: an open object, as the reference answers for such graphs.
  const config = { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' };
  return { state: object(state), input: object(keysOf(builder._inputDefinition)), output: object(keysOf(builder._outputDefinition)), config };
}

/** What a channel says about its value at runtime: a messages list, or a reducer's default. */
function channelSchema(channel: unknown, helpers: LangGraphSchemaHelpers): JsonSchema {
  const { operator, initialValueFactory } = (channel ?? {}) as { operator?: unknown; initialValueFactory?: () => unknown };
  if (operator === helpers.messagesStateReducer) return { type: 'array', items: { type: 'object' }, langgraph_type: 'messages' };
  if (typeof initialValueFactory !== 'function') return {};
  try {
    const value = initialValueFactory();
    if (value === undefined) return {};
    const type = Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value;
    return { ...(['string', 'number', 'boolean', 'array', 'object', 'null'].includes(type) ? { type } : {}), default: JSON.parse(JSON.stringify(value)) };
  } catch {
    return {};
  }
}

const omitUndefined = (schemas: GraphSchemas): GraphSchemas =>
  Object.fromEntries(Object.entries(schemas).filter(([, value]) => value !== undefined)) as GraphSchemas;
