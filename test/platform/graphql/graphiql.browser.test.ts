// GraphiQL as a newcomer uses it: a real (headless) Chromium opens /graphql, pastes the API key into
// the headers editor, runs the viewer query and sees their email, with every asset served by the
// platform itself (no CDN), so it works offline and behind a firewall.
// Chromium is Debian's package, installed by scripts/test-prereqs.mjs (`npm test` runs it first).
import { existsSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';

const CHROMIUM_PATH = '/usr/bin/chromium';
const chromiumMissing = !existsSync(CHROMIUM_PATH);
const skipReason = `${CHROMIUM_PATH} is not installed: run \`npm test\` as root (scripts/test-prereqs.mjs installs it) or \`sudo apt-get install -y --no-install-recommends chromium\``;
if (chromiumMissing) console.warn(`GraphiQL browser test skipped: ${skipReason}`);

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** The host a URL really reaches: blob: URLs belong to the page's own origin; data: URLs reach nothing. */
function hostReached(url: string): string | undefined {
  if (url.startsWith('data:')) return undefined;
  return new URL(url.startsWith('blob:') ? url.slice('blob:'.length) : url).host.replace(/:\d+$/, '');
}

/**
 * Replaces the whole content of one of GraphiQL's Monaco editors, as a user would by typing. Editors
 * are told apart by their model URI (…-operation.graphql, …-request-headers.json, …-response.json).
 */
async function replaceEditorContent(page: Page, model: string, text: string) {
  await page.locator(`.monaco-editor[data-uri$="-${model}"] .view-lines`).click();
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.press('Delete');
  // insertText, not type(): Monaco's bracket auto-closing would otherwise double the braces.
  await page.keyboard.insertText(text);
}

describe('GraphiQL in headless Chromium', () => {
  let platform: TestPlatform;
  let tenant: Awaited<ReturnType<typeof buildTenant>>;
  let browser: Browser;

  beforeAll(async () => {
    if (chromiumMissing) return;
    platform = await startTestPlatform();
    tenant = await buildTenant(platform.system);
    browser = await chromium.launch({
      executablePath: CHROMIUM_PATH,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it.skipIf(chromiumMissing)(`runs the viewer query with the API key from the headers editor${chromiumMissing ? ` (skipped: ${skipReason})` : ''}`, async () => {
    const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
    const page = await context.newPage();
    const reached: string[] = [];
    page.on('request', (request) => reached.push(request.url()));
    page.on('websocket', (socket) => reached.push(socket.url()));

    const landing = await page.goto(`${platform.url}/graphql`, { waitUntil: 'load' });
    expect(landing?.status()).toBe(200);
    expect(landing?.headers()['content-type']).toMatch(/^text\/html/);
    expect(await landing?.request().headerValue('accept')).toMatch(/text\/html/);
    await page.locator('button.graphiql-execute-button').waitFor({ state: 'visible', timeout: 20_000 });
    await expect(page.title()).resolves.toBe('Agent Platform GraphQL');

    await replaceEditorContent(page, 'request-headers.json', JSON.stringify({ 'X-Api-Key': tenant.adminKey }));
    await replaceEditorContent(page, 'operation.graphql', '{ viewer { user { email } workspaces { id name } } }');

    const executed = page.waitForResponse(
      (response) => response.url() === `${platform.url}/graphql` && response.request().method() === 'POST' && /viewer/.test(response.request().postData() ?? ''),
    );
    await page.locator('button.graphiql-execute-button').click();
    const response = await executed;
    expect(response.status()).toBe(200);
    expect(await response.request().headerValue('x-api-key')).toBe(tenant.adminKey);

    // What the user sees: the result pane (a Monaco editor) shows the viewer's email and workspace.
    // Monaco may soft-wrap a long line anywhere, so compare with all whitespace removed.
    await page.waitForFunction(
      (email) => document.querySelector('section.result-window')?.textContent?.replace(/\s+/g, '').includes(email),
      tenant.admin.email,
      { timeout: 10_000 },
    );
    const shown = (await page.locator('section.result-window').innerText()).replace(/\s+/g, '');
    expect(shown).toContain(`"email":"${tenant.admin.email}"`);
    expect(shown).toContain(`"id":"${tenant.workspace.id}"`);
    expect(shown).not.toContain('"errors"');

    // GraphiQL's scripts, styles and workers all come from this server: nothing left loopback.
    expect(reached.length).toBeGreaterThan(1);
    const external = reached.filter((url) => {
      const host = hostReached(url);
      return host !== undefined && !LOOPBACK_HOSTS.has(host);
    });
    expect(external).toEqual([]);
    await context.close();
  });
});
