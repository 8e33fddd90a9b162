// A deployment's row is read once a second per process and reused, but only on the database it came
// from: one process holding two agent servers' databases where the same deployment id is recorded
// (a test's workers, a platform process running local deployments) must not answer one with the other's.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { createDeps } from '../../../../src/wiring.js';
import { agentContext, registerServedDeployment } from '../../../../src/agent-server/services/served-deployment/served-deployment.js';
import { SYSTEM_VIEWER } from '../../../../src/viewer.js';
import { TEMPLATE_DATABASE } from '../../../support/database-names.js';
import { databaseUrl, testConfig } from '../../../support/helpers.js';
import { fixtureConfig, removeDir } from '../../../support/serve.js';

const logins = inject('databaseLogins');
const otherName = `${new URL(databaseUrl()).pathname.slice(1)}_other_${randomBytes(3).toString('hex')}`;
const otherUrl = (() => {
  const url = new URL(databaseUrl());
  url.pathname = `/${otherName}`;
  return url.toString();
})();

const onAdmin = async (sql: string) => {
  const admin = new pg.Client({ connectionString: inject('adminDatabaseUrl') });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
};

let wirings: Awaited<ReturnType<typeof createDeps>>[] = [];
const project = fixtureConfig();
beforeAll(async () => {
  await onAdmin(`CREATE DATABASE ${otherName} TEMPLATE ${TEMPLATE_DATABASE}${logins.owner ? ` OWNER ${logins.owner}` : ''}`);
  wirings = await Promise.all(
    [databaseUrl(), otherUrl].map((url) => createDeps(testConfig({ DATABASE_URL: url }), pino({ level: 'silent' }), { databaseUrl: url, listen: false })),
  );
});
afterAll(async () => {
  await Promise.all(wirings.map((wiring) => wiring.stop()));
  await onAdmin(`DROP DATABASE IF EXISTS ${otherName} WITH (FORCE)`);
  removeDir(project.dir);
});

describe("a deployment's cached row", () => {
  it('is the row of the database asked, when two databases hold the same deployment', async () => {
    const deploymentId = randomUUID();
    // The same deployment in each database, with other graphs.
    const one = join(project.dir, 'one.json');
    writeFileSync(one, JSON.stringify({ graphs: { only: (JSON.parse(readFileSync(project.configPath, 'utf8')) as { graphs: Record<string, string> }).graphs.agent } }));
    const [platform, own] = wirings.map((wiring) => ({ ...wiring.deps, viewer: SYSTEM_VIEWER }));
    for (const [ctx, configPath] of [[platform!, project.configPath], [own!, one]] as const) {
      await registerServedDeployment(ctx, { configPath, deploymentId, name: 'cached', workspaceId: randomUUID(), organizationId: randomUUID() });
    }
    // Read from each, within the cache's second.
    for (let round = 0; round < 2; round++) {
      expect((await agentContext(platform!, deploymentId)).deployment.graphIds).toContain('nested');
      expect((await agentContext(own!, deploymentId)).deployment.graphIds).toEqual(['only']);
    }
  });
});
