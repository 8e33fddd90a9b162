// Loads the graphs a config file names and hands out a runnable graph per run. An export may be a
// compiled graph, a StateGraph (compiled here), a promise of either, or a factory
// `(config, access) => graph` that is called again for every run (so per-run configuration can shape
// the graph), and for every read of a thread's state or an assistant's graph; `access` says which, as
// langgraph-api 1.5 passes it (GraphAccess).
import { pathToFileURL } from 'node:url';
import { SHARE_ENV, Worker } from 'node:worker_threads';
import type { BaseCheckpointSaver, BaseStore } from '@langchain/langgraph';
import type { Pregel } from '@langchain/langgraph/pregel';
import type { RunnableConfig } from '@langchain/core/runnables';
import { AppError } from '../../errors.js';
import { defaultAssistantId } from '../services/assistants/default-assistant-id.js';
import type { Logger } from 'pino';
import { applyGraphConfigEnv, type GraphConfig, type GraphEntry } from '../../contracts/graph-config.js';
import type { CustomAuth } from '../services/custom-auth/custom-auth.js';
import { loadCustomAuth } from './custom-auth.js';
import { registerSdkLogger } from './sdk-logger.js';
import { langGraphSchemaHelpers, type GraphSchemas, type LangGraphSchemaHelpers } from './graph-schemas.js';
import type { TypeSchemas } from './type-schemas.js';

// biome-ignore lint/suspicious/noExplicitAny: graphs are user code of any state shape
export type RunnableGraph = Pregel<any, any>;
/**
 * Why a factory graph is being built, its second argument (langgraph-api 1.5's ServerRuntime): to
 * execute a run, with the run's context, or to read an assistant's graph or a thread's state (no run).
 * A factory may build a cheaper graph, or check the caller, for reads.
 */
export type GraphAccess =
  | { accessContext: 'threads.create_run'; executionRuntime: { context: unknown } }
  | { accessContext: 'assistants.read' | 'threads.read' | 'threads.update'; executionRuntime: null };

/** A read's GraphAccess (no run executes). */
export const readAccess = (accessContext: Exclude<GraphAccess['accessContext'], 'threads.create_run'>): GraphAccess => ({ accessContext, executionRuntime: null });

type GraphFactory = (config: RunnableConfig, access: GraphAccess) => Promise<RunnableGraph>;

type LoadedGraph = GraphEntry & {
  /** Set for static exports: one copy with the checkpointer, one without (stateless runs). */
  durable?: RunnableGraph;
  ephemeral?: RunnableGraph;
  factory?: GraphFactory;
};

export type Persistence = { checkpointer: BaseCheckpointSaver; store: BaseStore };

const isStateGraph = (value: unknown): value is { compile(): RunnableGraph } =>
  typeof value === 'object' && value !== null && typeof (value as { compile?: unknown }).compile === 'function';
/**
 * A compiled graph of any LangGraph.js: marked `lg_is_pregel` since 0.2.19, and before that a Pregel
 * of the `langgraph.pregel` namespace (LangChain's serialisable id), with the methods the runtime calls.
 */
const isCompiled = (value: unknown): value is RunnableGraph => {
  if (typeof value !== 'object' || value === null) return false;
  const graph = value as { lg_is_pregel?: unknown; lc_namespace?: unknown; stream?: unknown; getState?: unknown };
  if (graph.lg_is_pregel === true) return true;
  return Array.isArray(graph.lc_namespace) && graph.lc_namespace.join('.') === 'langgraph.pregel' && typeof graph.stream === 'function' && typeof graph.getState === 'function';
};

/** What an export is, for a build error that says why it cannot be served. */
const describeValue = (value: unknown) => {
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value;
  const name = (value as object).constructor?.name;
  return name && name !== 'Object' ? `a ${name}` : `an object with keys ${Object.keys(value).slice(0, 8).join(', ') || '(none)'}`;
};

function toCompiled(value: unknown, graphId: string): RunnableGraph {
  if (isCompiled(value)) return value;
  if (isStateGraph(value)) return value.compile();
  // createAgent() and similar wrappers keep the compiled graph under `.graph`.
  const inner = (value as { graph?: unknown } | null)?.graph;
  if (isCompiled(inner)) return inner;
  throw new Error(`Graph "${graphId}" is not a LangGraph graph: expected a compiled graph, a StateGraph or a function returning one, got ${describeValue(value)}`);
}

/**
 * A copy of a graph to give a checkpointer and store of its own. `withConfig` copies a graph since
 * LangGraph.js 0.2.9; before, it wraps it (Runnable's), and what is set on the wrapper never reaches
 * the graph: such a graph is copied as an object of its own class.
 */
function copyGraph(graph: RunnableGraph): RunnableGraph {
  const copy = graph.withConfig({}) as RunnableGraph;
  if (isCompiled(copy)) return copy;
  return Object.assign(Object.create(Object.getPrototypeOf(graph) as object) as object, graph) as RunnableGraph;
}

// How long a schema request waits for the types, as the reference server bounds its schema requests
// (LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS, 30 s by default).
const TYPE_SCHEMAS_TIMEOUT_MS = 30_000;
const typeSchemasTimeoutMs = () => Number(process.env.LANGGRAPH_SCHEMA_RESOLVE_TIMEOUT_MS) || TYPE_SCHEMAS_TIMEOUT_MS;
// The read itself may take longer (a runtime starting on a busy machine): a request that gave up on
// it is served the runtime schemas, later ones the types once read. Past this (or ten request bounds,
// if longer) it is stopped, so that types the checker cannot finish with do not hold a core.
const TYPE_SCHEMAS_READ_MS = 300_000;

/**
 * Reads the graphs' schemas from their TypeScript types in a worker thread; undefined (with a log line
 * saying why) when that fails or takes far too long, and runtime schemas are served.
 */
function readTypeSchemasInThread(config: GraphConfig, logger: Logger): Promise<TypeSchemas | undefined> {
  const timeoutMs = Math.max(typeSchemasTimeoutMs() * 10, TYPE_SCHEMAS_READ_MS);
  const specs = config.graphs.map(({ graphId, file, exportName }) => ({ graphId, file, exportName }));
  const started = performance.now();
  return new Promise((resolve) => {
    const worker = new Worker(new URL('../../thread-entry.mjs', import.meta.url), {
      workerData: { specs, body: new URL('./type-schemas.worker.ts', import.meta.url).href },
      env: SHARE_ENV,
    });
    let settled = false;
    // Once: terminating the worker after its answer makes it exit too.
    const done = (schemas: TypeSchemas | undefined, problem?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      if (problem) logger.warn({ graphIds: specs.map((spec) => spec.graphId), timeoutMs }, `schemas from TypeScript types not read (${problem}): the graphs' runtime schemas are served`);
      else logger.debug({ ms: Math.round(performance.now() - started) }, 'schemas read from TypeScript types');
      resolve(schemas);
    };
    const timer = setTimeout(() => done(undefined, `took longer than ${timeoutMs} ms`), timeoutMs);
    worker.once('message', (schemas: TypeSchemas) => done(schemas));
    worker.once('error', (error) => done(undefined, error.message));
    worker.once('exit', (code) => done(undefined, `the worker exited with ${code}`));
  });
}

export class GraphRegistry {
  private typeSchemas: Promise<TypeSchemas | undefined> | undefined;

  private constructor(
    readonly config: GraphConfig,
    private readonly graphs: Map<string, LoadedGraph>,
    private readonly persistence: Persistence,
    /** The project's custom auth (langgraph.json `auth`), for the agent server that serves these graphs. */
    readonly auth: CustomAuth | undefined,
  ) {}

  /**
   * Starts reading the graphs' schemas from their TypeScript types (off the request path: a worker
   * thread, once per runtime, that is per revision). Schema reads wait for it, at most its time bound.
   */
  private readTypesInBackground(logger: Logger): void {
    this.typeSchemas ??= readTypeSchemasInThread(this.config, logger);
  }

  /** LangGraph's schema helpers as the graph's own copy of the package has them (graph-schemas.ts). */
  schemaHelpers(graphId: string): Promise<LangGraphSchemaHelpers | undefined> {
    const spec = this.config.graphs.find((entry) => entry.graphId === graphId);
    return spec ? langGraphSchemaHelpers(spec.file) : Promise.resolve(undefined);
  }

  /**
   * A graph's (or its subgraph's, by namespace) schemas from TypeScript types, if they are read within
   * the request's time bound (logged when they are not).
   */
  async schemasFromTypes(graphId: string, namespace: string, logger: Logger): Promise<GraphSchemas | undefined> {
    // Read when first asked, not at every start: a TypeScript program over the project costs seconds of
    // CPU, and most deployments are never asked (their callers are apps; Studio and schema clients ask).
    this.readTypesInBackground(logger);
    if (!this.typeSchemas) return undefined;
    const timeoutMs = typeSchemasTimeoutMs();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), timeoutMs)));
    const schemas = await Promise.race([this.typeSchemas, late]);
    clearTimeout(timer);
    if (schemas === 'late') {
      logger.warn({ graphId, timeoutMs }, `schemas from TypeScript types not read (took longer than ${timeoutMs} ms): the graph's runtime schemas are served`);
      return undefined;
    }
    return schemas?.[graphId]?.[namespace];
  }

  /**
   * Imports every graph of the config (TypeScript through the process's tsx loader). Static graphs get
   * the deployment's checkpointer and store now; factories get them per run. Throws naming the graph
   * that failed to load, or the custom auth module when it cannot be imported (so a build fails on it).
   */
  static async load(config: GraphConfig, persistence: Persistence, logger: Logger): Promise<GraphRegistry> {
    // Graph code reads its settings from the environment (the operator's own environment wins), and
    // graphs written for LangGraph Platform call the SDK's getLogger() at import.
    applyGraphConfigEnv(config);
    registerSdkLogger(logger);
    const graphs = new Map<string, LoadedGraph>();
    for (const entry of config.graphs) {
      let exported: unknown;
      try {
        const module = (await import(pathToFileURL(entry.file).href)) as Record<string, unknown>;
        exported = module[entry.exportName];
      } catch (error) {
        throw new Error(`Could not load graph "${entry.graphId}" from ${entry.file}: ${(error as Error).message}`, { cause: error });
      }
      if (exported === undefined) throw new Error(`Graph "${entry.graphId}": ${entry.file} has no export "${entry.exportName}"`);
      if (typeof exported === 'function' && !isCompiled(exported)) {
        const factory = exported as (config: RunnableConfig, access: GraphAccess) => unknown;
        // Called once now, with an empty configuration, so a factory that returns no graph fails the
        // build (not every later request); one that needs a run's configuration to build may throw
        // here, and is left to its runs.
        const trial = await Promise.resolve()
          .then(() => factory({ configurable: {} }, readAccess('assistants.read')))
          .catch(() => undefined);
        if (trial !== undefined) toCompiled(trial, entry.graphId);
        graphs.set(entry.graphId, { ...entry, factory: async (runConfig, access) => toCompiled(await factory(runConfig, access), entry.graphId) });
        continue;
      }
      const compiled = toCompiled(await exported, entry.graphId);
      const durable = copyGraph(compiled);
      durable.checkpointer = persistence.checkpointer;
      durable.store = persistence.store;
      const ephemeral = copyGraph(compiled);
      ephemeral.checkpointer = undefined;
      ephemeral.store = persistence.store;
      graphs.set(entry.graphId, { ...entry, durable, ephemeral });
    }
    const auth = await loadCustomAuth(config, logger);
    return new GraphRegistry(config, graphs, persistence, auth);
  }

  graphIds(): string[] {
    return [...this.graphs.keys()];
  }

  has(graphId: string): boolean {
    return this.graphs.has(graphId);
  }

  /** The graph id a default assistant id or graph name stands for, if any. */
  graphForAssistantId(assistantId: string): string | undefined {
    if (this.graphs.has(assistantId)) return assistantId;
    return this.graphIds().find((graphId) => defaultAssistantId(graphId) === assistantId);
  }

  /**
   * A graph ready to run: with the Postgres checkpointer unless `stateless` (temporary threads keep no
   * history), and the deployment's store. Throws NOT_FOUND for a graph this deployment does not serve.
   */
  async resolve(graphId: string, config: RunnableConfig, access: GraphAccess, options: { stateless?: boolean } = {}): Promise<RunnableGraph> {
    const graph = this.graphs.get(graphId);
    if (!graph) throw AppError.notFound(`Graph "${graphId}" not found`);
    if (graph.factory) {
      const built = await graph.factory(config, access);
      const copy = copyGraph(built);
      copy.checkpointer = options.stateless ? undefined : this.persistence.checkpointer;
      copy.store = this.persistence.store;
      return copy;
    }
    return (options.stateless ? graph.ephemeral : graph.durable)!;
  }
}
