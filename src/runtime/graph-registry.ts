// Loads the graphs a config file names and hands out a runnable graph per run. An export may be a
// compiled graph, a StateGraph (compiled here), a promise of either, or a factory `(config) => graph`
// that is called again for every run (so per-run configuration can shape the graph).
import { pathToFileURL } from 'node:url';
import type { BaseCheckpointSaver, BaseStore } from '@langchain/langgraph';
import type { Pregel } from '@langchain/langgraph/pregel';
import type { RunnableConfig } from '@langchain/core/runnables';
import { AppError } from '../errors.js';
import { defaultAssistantId } from '../services/assistants/default-assistant-id.js';
import type { Logger } from 'pino';
import { applyGraphConfigEnv, type GraphConfig, type GraphEntry } from '../graph-config.js';
import { registerSdkLogger } from './sdk-logger.js';

// biome-ignore lint/suspicious/noExplicitAny: graphs are user code of any state shape
export type RunnableGraph = Pregel<any, any>;
type GraphFactory = (config: RunnableConfig) => Promise<RunnableGraph>;

type LoadedGraph = GraphEntry & {
  /** Set for static exports: one copy with the checkpointer, one without (stateless runs). */
  durable?: RunnableGraph;
  ephemeral?: RunnableGraph;
  factory?: GraphFactory;
};

export type Persistence = { checkpointer: BaseCheckpointSaver; store: BaseStore };

const isStateGraph = (value: unknown): value is { compile(): RunnableGraph } =>
  typeof value === 'object' && value !== null && typeof (value as { compile?: unknown }).compile === 'function';
const isCompiled = (value: unknown): value is RunnableGraph =>
  typeof value === 'object' && value !== null && (value as { lg_is_pregel?: unknown }).lg_is_pregel === true;

function toCompiled(value: unknown, graphId: string): RunnableGraph {
  if (isCompiled(value)) return value;
  if (isStateGraph(value)) return value.compile();
  // createAgent() and similar wrappers keep the compiled graph under `.graph`.
  const inner = (value as { graph?: unknown } | null)?.graph;
  if (isCompiled(inner)) return inner;
  throw new Error(`Graph "${graphId}" is not a LangGraph graph (got ${value === null ? 'null' : typeof value})`);
}

export class GraphRegistry {
  private constructor(
    readonly config: GraphConfig,
    private readonly graphs: Map<string, LoadedGraph>,
    private readonly persistence: Persistence,
  ) {}

  /**
   * Imports every graph of the config (TypeScript through the process's tsx loader). Static graphs get
   * the deployment's checkpointer and store now; factories get them per run. Throws naming the graph
   * that failed to load.
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
        const factory = exported as (config: RunnableConfig) => unknown;
        graphs.set(entry.graphId, { ...entry, factory: async (runConfig) => toCompiled(await factory(runConfig), entry.graphId) });
        continue;
      }
      const compiled = toCompiled(await exported, entry.graphId);
      const durable = compiled.withConfig({}) as RunnableGraph;
      durable.checkpointer = persistence.checkpointer;
      durable.store = persistence.store;
      const ephemeral = compiled.withConfig({}) as RunnableGraph;
      ephemeral.checkpointer = undefined;
      ephemeral.store = persistence.store;
      graphs.set(entry.graphId, { ...entry, durable, ephemeral });
    }
    return new GraphRegistry(config, graphs, persistence);
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
  async resolve(graphId: string, config: RunnableConfig, options: { stateless?: boolean } = {}): Promise<RunnableGraph> {
    const graph = this.graphs.get(graphId);
    if (!graph) throw AppError.notFound(`Graph "${graphId}" not found`);
    if (graph.factory) {
      const built = await graph.factory(config);
      const copy = built.withConfig({}) as RunnableGraph;
      copy.checkpointer = options.stateless ? undefined : this.persistence.checkpointer;
      copy.store = this.persistence.store;
      return copy;
    }
    return (options.stateless ? graph.ephemeral : graph.durable)!;
  }
}
