// Benchmark set-up: the platform in this process, and a tenant of its own for a benchmark, as a user would have: organization, workspace, admin user and
// an organization-wide key (no X-Tenant-Id needed: what the SDKs send with just an API key).
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Deps } from '../src/context.js';
import * as apiKeys from '../src/platform/services/tenancy/api-keys.service.js';
import * as tenancy from '../src/platform/services/tenancy/tenancy.service.js';
import { SYSTEM_VIEWER } from '../src/viewer.js';

export async function createBenchTenant(deps: Deps) {
  const system = { ...deps, viewer: SYSTEM_VIEWER };
  const organization = await tenancy.createOrganization(system, { name: 'Bench Org' });
  const workspace = await tenancy.createWorkspace(system, { organizationId: organization.id, name: 'Bench Workspace' });
  const user = await tenancy.createUser(system, {
    organizationId: organization.id,
    email: `bench-${randomUUID()}@example.test`,
    organizationRole: 'ORGANIZATION_ADMIN',
    workspaces: [{ workspaceId: workspace.id, role: 'WORKSPACE_ADMIN' }],
  });
  const { key } = await apiKeys.createApiKey(system, { organizationId: organization.id, userId: user.id, workspaceId: null });
  return { organization, workspace, user, key };
}

/**
 * The platform as `agent-platform start` runs it, on an embedded PostgreSQL in a fresh temp folder,
 * with `overrides` of its settings; `stop()` also removes the folder.
 */
export async function startBenchPlatform(overrides: Record<string, string | undefined>) {
  const { pino } = await import('pino');
  const { loadConfig } = await import('../src/config.js');
  const { startPlatform } = await import('../src/start.js');
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-platform-bench-'));
  const config = loadConfig({}, {
    AGENT_PLATFORM_DATA_DIR: dataDir,
    PORT: '0',
    HOST: '127.0.0.1',
    AGENT_PLATFORM_SECRET_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'warn',
    ...overrides,
  });
  console.log(`starting the platform (embedded PostgreSQL in ${dataDir}) …`);
  const platform = await startPlatform(config, pino({ level: config.logLevel }));
  return {
    ...platform,
    config,
    async stop() {
      await platform.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
