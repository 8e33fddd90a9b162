// The OpenAPI documents of the platform (/openapi.json) and of a deployment's agent server
// (/deployments/<id>/openapi.json): they validate as OpenAPI 3.1, and every route the routers mount
// is in them (a route added without its operation fails here).
import { randomUUID } from 'node:crypto';
import { compileErrors, validate } from '@readme/openapi-parser';
import { Router } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentServerRouter } from '../../../src/agent-server/rest/router.js';
import { openApiPaths } from '../../../src/http/openapi/document.js';
import { restRouter } from '../../../src/platform/rest/router.js';
import { upsertLocalDeployment } from '../../../src/platform/services/deployments/deployments.store.js';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';

type Layer = { route?: { path: string; methods: Record<string, boolean> }; handle: { stack?: Layer[] }; rawPath?: string };
type OpenApi = { openapi: string; servers: { url: string }[]; paths: Record<string, Record<string, { requestBody?: unknown }>> };

/** Every `METHOD /path` an express router mounts, through nested routers, in OpenAPI's path form. */
function mountedRoutes(router: Router, options: { skipPrefixes?: string[] } = {}): string[] {
  const routes: string[] = [];
  const walk = (stack: Layer[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const method of Object.keys(layer.route.methods).filter((name) => name !== '_all')) {
          for (const path of openApiPaths(`${prefix}${layer.route.path}`.replace(/(.)\/$/, '$1'))) routes.push(`${method.toUpperCase()} ${path}`);
        }
      } else if (layer.handle.stack) {
        const mount = layer.rawPath && layer.rawPath !== '/' ? layer.rawPath : '';
        if (options.skipPrefixes?.includes(mount)) continue;
        walk(layer.handle.stack, `${prefix}${mount}`);
      }
    }
  };
  walk((router as unknown as { stack: Layer[] }).stack, '');
  return [...new Set(routes)];
}

const documented = (document: OpenApi) =>
  Object.entries(document.paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`));

let platform: TestPlatform;
beforeAll(async () => {
  platform = await startTestPlatform();
});
afterAll(async () => {
  await platform?.stop();
});

async function fetchDocument(path: string): Promise<OpenApi> {
  const response = await fetch(`${platform.url}${path}`);
  expect(response.status).toBe(200);
  return (await response.json()) as OpenApi;
}

describe('OpenAPI documents', () => {
  it('the platform document validates as OpenAPI 3.1 and covers every mounted platform route', async () => {
    const document = await fetchDocument('/openapi.json');
    expect(document.openapi).toBe('3.1.0');
    const result = await validate(structuredClone(document) as never);
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);

    // Each deployment's agent server has a document of its own (next test).
    const mounted = mountedRoutes(restRouter(platform.deps), { skipPrefixes: ['/deployments/:deploymentId'] });
    expect(mounted.length).toBeGreaterThan(30);
    expect(mounted.filter((route) => !documented(document).includes(route))).toEqual([]);
    // Request bodies are the services' zod schemas.
    expect(document.paths['/api/v1/bulk-exports']!.post!.requestBody).toMatchObject({
      content: { 'application/json': { schema: { type: 'object', properties: { bulk_export_destination_id: expect.any(Object) } } } },
    });
  });

  it("a deployment's agent-server document validates and covers every mounted agent-server route", async () => {
    // Served at the url of a deployment that exists (an unknown one answers 404).
    const deploymentId = randomUUID();
    const tenant = await buildTenant(platform.system);
    await upsertLocalDeployment(platform.deps.db, { id: deploymentId, tenantId: tenant.workspace.id, name: 'openapi', configPath: '/nowhere/langgraph.json', graphIds: [] });
    const document = await fetchDocument(`/deployments/${deploymentId}/openapi.json`);
    expect(document.servers).toEqual([{ url: `/deployments/${deploymentId}` }]);
    const result = await validate(structuredClone(document) as never);
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);

    const router = agentServerRouter(platform.deps, { deploymentId, runtimeId: () => deploymentId, anonymous: true, dev: false });
    const mounted = mountedRoutes(router);
    expect(mounted).toEqual(expect.arrayContaining(['POST /threads/{thread_id}/runs/stream', 'POST /mcp', 'POST /a2a/{assistant_id}', 'GET /metrics']));
    expect(mounted.filter((route) => !documented(document).includes(route))).toEqual([]);
    expect(document.paths['/assistants']!.post!.requestBody).toMatchObject({
      content: { 'application/json': { schema: { properties: { graph_id: { type: 'string' } }, required: ['graph_id'] } } },
    });
  });

  it('the coverage check catches a route mounted without its operation', async () => {
    const document = await fetchDocument('/openapi.json');
    const router = Router();
    router.use('/api/v1', restRouter(platform.deps));
    const extra = Router();
    extra.post('/widgets/:widgetId/polish', () => undefined);
    router.use('/api/v1', extra);
    const missing = mountedRoutes(router, { skipPrefixes: ['/api/v1/deployments/:deploymentId'] }).filter((route) => !documented(document).includes(route));
    expect(missing).toContain('POST /api/v1/widgets/{widget_id}/polish');
  });
});
