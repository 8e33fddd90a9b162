// Loads the embedding function a graph config's `store.index.embed` names, as the reference server
// does: `"./path/to/file.ts:export"` (an async function from texts to vectors, or a LangChain
// Embeddings object) resolved against the config's folder, or `"<provider>:<model>"` (the provider's
// LangChain package, installed in the project). Runs in the runtime only: it is deployment code.
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Embedder } from '../services/store/store-operations.js';
import type { GraphConfig } from '../../contracts/graph-config.js';

type EmbeddingsLike = { embedDocuments(texts: string[]): Promise<number[][]>; embedQuery(text: string): Promise<number[]> };
type EmbedFunction = (texts: string[]) => Promise<number[][]> | number[][];

// The LangChain package and class of each provider name LangGraph's configs use.
const PROVIDERS: Record<string, [string, string]> = {
  openai: ['@langchain/openai', 'OpenAIEmbeddings'],
  'azure-openai': ['@langchain/openai', 'AzureOpenAIEmbeddings'],
  cohere: ['@langchain/cohere', 'CohereEmbeddings'],
  'google-genai': ['@langchain/google-genai', 'GoogleGenerativeAIEmbeddings'],
  'google-vertexai': ['@langchain/google-vertexai', 'VertexAIEmbeddings'],
  mistralai: ['@langchain/mistralai', 'MistralAIEmbeddings'],
  ollama: ['@langchain/ollama', 'OllamaEmbeddings'],
  bedrock: ['@langchain/aws', 'BedrockEmbeddings'],
};

const isEmbeddings = (value: unknown): value is EmbeddingsLike =>
  typeof value === 'object' && value !== null && typeof (value as EmbeddingsLike).embedDocuments === 'function' && typeof (value as EmbeddingsLike).embedQuery === 'function';

async function loadFromFile(root: string, spec: string): Promise<EmbeddingsLike> {
  const [file, exportName = 'default'] = spec.split(':', 2) as [string, string | undefined];
  const module = (await import(pathToFileURL(resolve(root, file)).href)) as Record<string, unknown>;
  const exported = await module[exportName];
  if (isEmbeddings(exported)) return exported;
  if (typeof exported !== 'function') throw new Error(`store.index.embed: ${file} has no embedding function or Embeddings object "${exportName}"`);
  const embed = exported as EmbedFunction;
  return { embedDocuments: async (texts) => embed(texts), embedQuery: async (text) => (await embed([text]))[0]! };
}

async function loadFromProvider(root: string, spec: string): Promise<EmbeddingsLike> {
  const [provider, model] = spec.split(':', 2) as [string, string | undefined];
  const known = PROVIDERS[provider];
  if (!known || !model) throw new Error(`store.index.embed "${spec}": expected "./file.ts:export" or "<provider>:<model>" with a provider of ${Object.keys(PROVIDERS).join(', ')}`);
  const [packageName, className] = known;
  let entry: string;
  try {
    entry = createRequire(join(root, 'package.json')).resolve(packageName);
  } catch {
    throw new Error(`store.index.embed "${spec}" needs ${packageName}: add it to the project's dependencies`);
  }
  const module = (await import(pathToFileURL(entry).href)) as Record<string, new (options: { model: string }) => EmbeddingsLike>;
  return new module[className]!({ model });
}

/** The store's embedder, checking every vector has the configured dimensions; none without `store.index`. */
export async function loadStoreEmbedder(config: Pick<GraphConfig, 'root' | 'store'>): Promise<Embedder | undefined> {
  const index = config.store?.index;
  if (!index) return undefined;
  const spec = index.embed;
  const embeddings = spec.startsWith('.') || spec.startsWith('/') ? await loadFromFile(config.root, spec) : await loadFromProvider(config.root, spec);
  const checked = (vector: number[] | undefined) => {
    if (!Array.isArray(vector) || vector.length !== index.dims) {
      throw new Error(`store.index.embed returned a vector of ${Array.isArray(vector) ? vector.length : 'no'} dimensions; store.index.dims is ${index.dims}`);
    }
    return vector;
  };
  return {
    documents: async (texts) => {
      const vectors = await embeddings.embedDocuments(texts);
      if (vectors.length !== texts.length) throw new Error(`store.index.embed returned ${vectors.length} vectors for ${texts.length} texts`);
      return vectors.map(checked);
    },
    query: async (text) => checked(await embeddings.embedQuery(text)),
  };
}
