// MCP through the official @modelcontextprotocol/sdk client against a real `serve` process: every
// assistant is a tool with its graph's input schema; calling one runs the graph.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { fixtureConfig, removeDir, startServe, type ServeProcess } from '../../support/serve.js';

let server: ServeProcess;
let mcp: Client;
beforeAll(async () => {
  // The config describes one graph ({"path", "description"}): that description becomes its tool's.
  const { dir, configPath } = fixtureConfig();
  const config = JSON.parse(readFileSync(configPath, 'utf8')) as { graphs: Record<string, unknown> };
  config.graphs.slow = { path: config.graphs.slow, description: 'Appends a label to a log, slowly.' };
  writeFileSync(configPath, JSON.stringify(config));
  server = await startServe({ configPath, dir });
  mcp = new Client({ name: 'mcp-test', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
});
afterAll(async () => {
  await mcp?.close();
  await server?.stop();
  removeDir(server?.dir);
});

describe('MCP', () => {
  it('lists one tool per assistant, with its graph input schema and a description', async () => {
    await server.client.assistants.create({ graphId: 'agent', name: 'weather helper', description: 'Tells the weather.' });
    const { tools } = await mcp.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    for (const graph of ['agent', 'interrupt', 'nested', 'failing', 'slow', 'factory', 'memory']) expect(byName.has(graph)).toBe(true);
    const agent = byName.get('agent')!;
    expect(agent.inputSchema.type).toBe('object');
    expect(Object.keys(agent.inputSchema.properties ?? {})).toContain('messages');
    expect(agent.description).toBe('Runs the "agent" graph and returns its output.');
    expect(byName.get('slow')!.description).toBe('Appends a label to a log, slowly.');
    // A created assistant's name becomes a valid tool name; its description is its own.
    expect(byName.get('weather_helper')?.description).toBe('Tells the weather.');
  });

  it('calls a tool: runs the graph and returns its output', async () => {
    const result = await mcp.callTool({ name: 'agent', arguments: { messages: [{ role: 'user', content: 'Weather in Paris?' }] } });
    expect(result.isError).toBe(false);
    const [content] = result.content as { type: string; text: string }[];
    expect(content!.type).toBe('text');
    const output = JSON.parse(content!.text) as { messages: { content: string }[] };
    expect(output.messages.at(-1)!.content).toBe('Answer: It is sunny in Paris.');
  });

  it('reports a failing graph as a tool error, and an unknown tool as an MCP error (not a 500)', async () => {
    const failed = await mcp.callTool({ name: 'failing', arguments: {} });
    expect(failed.isError).toBe(true);
    await expect(mcp.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/Unknown tool: no_such_tool/);
  });

  it('answers bad requests with 4xx JSON-RPC errors', async () => {
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(`${server.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body });
    const notJsonRpc = await post(JSON.stringify({ hello: 'world' }));
    expect(notJsonRpc.status).toBe(400);
    expect(((await notJsonRpc.json()) as { error: { code: number } }).error.code).toBeLessThan(0);
    const notJson = await post('{not json');
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
    expect((await post('{"jsonrpc":"2.0","id":1,"method":"tools/list"}', { accept: 'text/html' })).status).toBe(406);
    expect((await fetch(`${server.url}/mcp`)).status).toBe(405);
  });
});
