// A project with its own installation of @langchain/langgraph (its own node_modules, as every project
// set up by `npm install` has), served by `serve`: what the graph wrote into its copy's registry
// (`jsonSchemaExtra`) is in its schemas.
import { cpSync, mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { removeDir, startServe, type ServeProcess } from '../../support/serve.js';

const ourModules = new URL('../../../node_modules/', import.meta.url).pathname;

/** A project folder whose node_modules holds a copy of @langchain/langgraph and links to the rest of ours. */
function projectWithOwnLangGraph(): string {
  const dir = mkdtempSync(join(tmpdir(), 'own-langgraph-'));
  const modules = join(dir, 'node_modules');
  mkdirSync(join(modules, '@langchain'), { recursive: true });
  for (const name of readdirSync(ourModules)) if (name !== '@langchain' && !name.startsWith('.')) symlinkSync(join(ourModules, name), join(modules, name));
  for (const name of readdirSync(join(ourModules, '@langchain'))) {
    if (name !== 'langgraph') symlinkSync(join(ourModules, '@langchain', name), join(modules, '@langchain', name));
  }
  cpSync(join(ourModules, '@langchain/langgraph'), join(modules, '@langchain/langgraph'), { recursive: true, dereference: true });
  writeFileSync(
    join(dir, 'registry.mts'),
    `import { z } from 'zod/v3';
import { StateGraph, START, END } from '@langchain/langgraph';
import { withLangGraph } from '@langchain/langgraph/zod';

const State = z.object({
  messages: withLangGraph(z.array(z.string()), {
    reducer: { schema: z.string(), fn: (a: string[], b: string) => [...a, b] },
    default: () => [],
    jsonSchemaExtra: { langgraph_type: 'messages' },
  }),
  count: z.number().default(0),
});

export const graph = new StateGraph(State)
  .addNode('step', (state) => ({ count: state.count + 1 }))
  .addEdge(START, 'step')
  .addEdge('step', END)
  .compile();
`,
  );
  writeFileSync(join(dir, 'langgraph.json'), JSON.stringify({ graphs: { registry: './registry.mts:graph' } }));
  return dir;
}

let server: ServeProcess;
let dir: string;
beforeAll(async () => {
  dir = projectWithOwnLangGraph();
  server = await startServe({ configPath: join(dir, 'langgraph.json'), dir });
});
afterAll(async () => {
  await server?.stop();
  removeDir(dir);
});

it("gives the jsonSchemaExtra a Zod state registered in the project's own copy of @langchain/langgraph", async () => {
  const schemas = await server.client.assistants.getSchemas('registry');
  const state = schemas.state_schema as { properties: Record<string, Record<string, unknown>> };
  // The update schema: the reducer's input (a string), with the graph's extra.
  expect(state.properties.messages).toEqual({ type: 'string', langgraph_type: 'messages' });
  expect(state.properties.count).toMatchObject({ type: 'number' });
});
