// An N+1 guard: the number of SQL statements a GraphQL request issues must not grow with the number of
// rows it returns (Pothos's Prisma plugin folds relations into the parent query).
import { PrismaPg } from '@prisma/adapter-pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../src/app.js';
import { PrismaClient } from '../../src/generated/prisma/client.js';
import { buildApiKey, buildTenant, buildWorkspace } from '../factories.js';
import { graphql, startTestPlatform, type TestPlatform } from '../helpers.js';

let platform: TestPlatform;
let app: App;
let url: string;
let statements = 0;
let counting: PrismaClient;

beforeAll(async () => {
  platform = await startTestPlatform();
  const logging = new PrismaClient({ adapter: new PrismaPg(platform.deps.db.pool), log: [{ emit: 'event', level: 'query' }] });
  logging.$on('query', () => statements++);
  counting = logging as unknown as PrismaClient;
  app = buildApp({ ...platform.deps, db: { ...platform.deps.db, prisma: counting } });
  url = await app.start(0, '127.0.0.1');
});
afterAll(async () => {
  await app?.stop();
  await counting?.$disconnect();
  await platform?.stop();
});

const QUERY = `{
  viewer { user { email } organization { name workspaces { id name organization { id } } } workspaces { id organization { name } } }
  apiKeys { shortKey user { email } workspace { name } }
}`;

async function countFor(key: string) {
  statements = 0;
  const { body } = await graphql(url, QUERY, { key });
  expect(body.errors).toBeUndefined();
  return { statements, body };
}

describe('GraphQL query count', () => {
  it('is the same for one workspace and two keys as for six workspaces and seven keys', async () => {
    const small = await buildTenant(platform.system);
    const large = await buildTenant(platform.system);
    for (let i = 0; i < 5; i++) {
      const workspace = await buildWorkspace(platform.system, large.organization.id);
      await buildApiKey(platform.system, large.organization.id, large.admin.id, workspace.id);
    }
    const one = await countFor(small.adminKey);
    const six = await countFor(large.adminKey);
    expect(six.body.data.viewer.workspaces).toHaveLength(6);
    expect(six.body.data.apiKeys).toHaveLength(7); // the admin and member keys, plus five
    expect(six.statements).toBe(one.statements);
  });
});
