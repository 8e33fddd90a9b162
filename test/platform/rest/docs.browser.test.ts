// The interactive reference as a reader opens it: headless Chromium loads /docs (the platform's) and
// /deployments/<id>/docs (an agent server's), Swagger UI renders the operations from the server's own
// /openapi.json, and every asset comes from this server (no CDN). Screenshots are kept under
// .vitest-artifacts/ (ignored by git) for a human to look at.
// Chromium is Debian's package, installed by scripts/test-prereqs.mjs (`npm test` runs it first).
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upsertLocalDeployment } from '../../../src/platform/services/deployments/deployments.store.js';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';

const CHROMIUM_PATH = '/usr/bin/chromium';
const chromiumMissing = !existsSync(CHROMIUM_PATH);
const skipReason = `${CHROMIUM_PATH} is not installed: run \`npm test\` as root (scripts/test-prereqs.mjs installs it) or \`sudo apt-get install -y --no-install-recommends chromium\``;
if (chromiumMissing) console.warn(`/docs browser test skipped: ${skipReason}`);

const ARTIFACTS = new URL('../../../.vitest-artifacts/', import.meta.url).pathname;

describe('/docs in headless Chromium', () => {
  let platform: TestPlatform;
  let browser: Browser;
  // An agent server's reference is served at the url of a deployment that exists.
  const deploymentId = randomUUID();

  beforeAll(async () => {
    if (chromiumMissing) return;
    platform = await startTestPlatform();
    const tenant = await buildTenant(platform.system);
    await upsertLocalDeployment(platform.deps.db, { id: deploymentId, tenantId: tenant.workspace.id, name: 'docs', configPath: '/nowhere/langgraph.json', graphIds: [] });
    browser = await chromium.launch({
      executablePath: CHROMIUM_PATH,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    mkdirSync(ARTIFACTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await platform?.stop();
  });

  const cases = [
    { name: 'platform', path: '/docs', title: 'Agent Platform', section: 'Bulk export', operation: '/api/v1/bulk-exports' },
    { name: 'agent-server', path: `/deployments/${deploymentId}/docs`, title: 'Agent Platform: agent server', section: 'Runs', operation: '/threads/{thread_id}/runs/stream' },
  ];

  for (const reference of cases) {
    it.skipIf(chromiumMissing)(`renders the ${reference.name} reference from bundled assets${chromiumMissing ? ` (skipped: ${skipReason})` : ''}`, async () => {
      const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
      const reached: string[] = [];
      page.on('request', (request) => reached.push(request.url()));
      const landing = await page.goto(`${platform.url}${reference.path}`, { waitUntil: 'load' });
      expect(landing?.status()).toBe(200);
      await page.locator('.swagger-ui .info .title').waitFor({ state: 'visible', timeout: 20_000 });
      expect(await page.locator('.swagger-ui .info .title').innerText()).toContain(reference.title);
      // Every section is listed; the reader opens one and finds its operations (one block each).
      expect((await page.locator('.opblock-tag').allInnerTexts()).length).toBeGreaterThan(4);
      await page.locator(`.opblock-tag[data-tag="${reference.section}"]`).click();
      await page.locator(`.opblock-summary-path[data-path="${reference.operation}"]`).first().waitFor({ state: 'visible', timeout: 10_000 });
      expect(await page.locator('.opblock').count()).toBeGreaterThan(3);
      await page.screenshot({ path: `${ARTIFACTS}docs-${reference.name}.png`, fullPage: false });

      expect(reached.some((url) => url.endsWith('/openapi.json'))).toBe(true);
      const external = reached.filter((url) => !url.startsWith(platform.url) && !url.startsWith('data:'));
      expect(external).toEqual([]);
      await page.close();
    });
  }
});
