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
import { migrateDatabase } from '../../../../src/database/migrate.js';
import { databaseUrl, testConfig } from '../../../support/helpers.js';
import { fixtureConfig, removeDir } from '../../../support/serve.js';

const logins = inject('databaseLogins');
// Two agent servers' databases on this file's server, each migrated with the agent server's chain.
const names = ['one', 'two'].map((which) => `${new URL(databaseUrl()).pathname.slice(1)}_${which}_${randomBytes(3).toString('hex')}`);
const urlOf = (name: string) => {
  const url = new URL(databaseUrl());
  url.pathname = `/${name}`;
  return url.toString();
};

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
  for (const name of names) await onAdmin(`CREATE DATABASE ${name}${logins.owner ? ` OWNER ${logins.owner}` : ''}`);
  for (const name of names) await migrateDatabase(urlOf(name), pino({ level: 'silent' }), 'agent-server');
  wirings = await Promise.all(
    names.map(urlOf).map((url) => createDeps(testConfig({ DATABASE_URL: url }), pino({ level: 'silent' }), { databaseUrl: url, listen: false })),
  );
});
afterAll(async () => {
  await Promise.all(wirings.map((wiring) => wiring.stop()));
  for (const name of names) await onAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  removeDir(project.dir);
});

describe("a deployment's cached row", () => {
  it('is the row of the database asked, when two databases hold the same deployment', async () => {
    const deploymentId = randomUUID();
    // The same deployment in each database, with other graphs.
    const one = join(project.dir, 'one.json');
    writeFileSync(one, JSON.stringify({ graphs: { only: (JSON.parse(readFileSync(project.configPath, 'utf8')) as { graphs: Record<string, string> }).graphs.agent } }));
    const [first, second] = wirings.map((wiring) => ({ ...wiring.deps, viewer: SYSTEM_VIEWER }));
    for (const [ctx, configPath] of [[first!, project.configPath], [second!, one]] as const) {
      await registerServedDeployment(ctx, { configPath, deploymentId, name: 'cached', workspaceId: randomUUID(), organizationId: randomUUID() });
    }
    // Read from each, within the cache's second.
    for (let round = 0; round < 2; round++) {
      expect((await agentContext(first!, deploymentId)).deployment.graphIds).toContain('nested');
      expect((await agentContext(second!, deploymentId)).deployment.graphIds).toEqual(['only']);
    }
  });
});
