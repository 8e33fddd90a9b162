// LangChain's chat front-end for LangGraph servers (agent-chat-ui), reproduced by a page of our own
// that makes its requests with the official SDK in headless Chromium (test/support/chat-page.ts),
// served from another origin than the server's, against `serve` and a deployed revision reached
// through the platform's gateway (built and started in its sandbox). Both ways its README sets it
// up: the browser straight to the server (cross-origin: CORS, the platform key sent by the page), and
// through its server-side passthrough (bodies forwarded as text/plain, the key added by the proxy).
// Each time a message gets its reply streamed token by token, the thread is there again after a
// reload (read back by id) and in the thread list. A page of an origin the deployment's http.cors does
// not name cannot reach it.
import { existsSync, readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import type { TestPlatform } from '../../support/helpers.js';
import { controlPlaneApi, deploymentBody, makeGitRepo, startControlPlanePlatform, stopControlPlanePlatform, waitForRevision } from '../../support/deployments.js';
import { startChatPage, type ChatPage } from '../../support/chat-page.js';
import { removeDir, startServe, type ServeProcess } from '../../support/serve.js';
import { launchChromium } from '../../platform/console/support.js';

const chromiumMissing = !existsSync('/usr/bin/chromium');
if (chromiumMissing) console.warn('Chat UI browser test skipped: /usr/bin/chromium is not installed (scripts/test-prereqs.mjs installs it)');

const CHAT_GRAPH = readFileSync(new URL('../../fixtures/chat-ui/chat.ts', import.meta.url), 'utf8');

type Seen = { threadId?: string; streamedParts: number; runCreated?: { run_id: string; thread_id?: string }; historyLength: number; replies: number; errors: string[] };

const seenBy = (page: Page) => page.evaluate(() => (window as unknown as { chatTest: Seen }).chatTest);

/** Opens the chat page at `pageUrl` for the server at `apiUrl`; resolves once it has checked the server and listed its threads. */
async function openChat(page: Page, pageUrl: string, query: Record<string, string>): Promise<void> {
  await page.goto(`${pageUrl}/?${new URLSearchParams(query)}`);
  await page.locator('#status[data-ready="true"]').waitFor();
  expect(await page.locator('#status').innerText()).toBe('connected');
}

/**
 * What a person does in the chat UI: sends a message and watches the reply stream in, reloads the
 * page (the thread read back by id from its url) and finds the thread in the list. Every request the
 * page made succeeded: none was blocked (CORS) or refused.
 */
async function chatRoundTrip(browser: Browser, pageUrl: string, query: Record<string, string>, text: string): Promise<void> {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  const failures: string[] = [];
  page.on('requestfailed', (request) => failures.push(`${request.method()} ${request.url()}: ${request.failure()?.errorText}`));
  page.on('response', (response) => {
    if (response.status() >= 400) failures.push(`${response.request().method()} ${response.url()}: ${response.status()}`);
  });
  page.on('console', (message) => {
    if (message.type() === 'error') failures.push(message.text());
  });
  try {
    await openChat(page, pageUrl, query);
    await page.getByLabel('Message', { exact: true }).fill(text);
    await page.getByRole('button', { name: 'Send' }).click();
    const reply = `You said: ${text}`;
    await page.locator('#messages li[data-type="ai"]', { hasText: reply }).waitFor();
    // The page has read the thread back after the run, as the UI does.
    await expect.poll(async () => ((seen) => seen.replies + seen.errors.length)(await seenBy(page)), { timeout: 20_000 }).toBe(1);
    const seen = await seenBy(page);
    expect(seen.errors).toEqual([]);
    // Streamed as the model wrote it, a token at a time, and the run's ids read from Content-Location.
    expect(seen.streamedParts).toBeGreaterThanOrEqual(reply.length);
    expect(seen.runCreated).toMatchObject({ thread_id: seen.threadId });
    expect(seen.historyLength).toBeGreaterThan(0);
    expect(new URL(page.url()).searchParams.get('threadId')).toBe(seen.threadId);

    // A reload reads the thread back by id, and lists it.
    await page.reload();
    await page.locator('#status[data-ready="true"]').waitFor();
    expect(await page.locator('#messages li').allInnerTexts()).toEqual([text, reply]);
    expect(await page.locator('#threads li').evaluateAll((items) => items.map((item) => (item as HTMLElement).dataset.threadId))).toContain(seen.threadId);
    expect((await seenBy(page)).errors).toEqual([]);
    expect(failures).toEqual([]);
  } finally {
    await context.close();
  }
}

describe.skipIf(chromiumMissing)('a chat UI in Chromium, as agent-chat-ui makes its requests', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  describe('at serve (no http.cors: any origin, as langgraph dev)', () => {
    let serve: ServeProcess;
    let page: ChatPage;
    beforeAll(async () => {
      serve = await startServe({ project: 'chat-ui' });
      page = await startChatPage({ passthrough: { apiUrl: serve.url } });
    }, 120_000);
    afterAll(async () => {
      await page?.stop();
      await serve?.stop();
      removeDir(serve?.dir ?? '');
    });

    it('straight from the page, cross-origin', async () => {
      expect(new URL(page.url).origin).not.toBe(new URL(serve.url).origin);
      await chatRoundTrip(browser, page.url, { apiUrl: serve.url }, 'hello from another port');
    });

    it('through the UI’s passthrough, which forwards bodies as text/plain', async () => {
      await chatRoundTrip(browser, page.url, { apiUrl: `${page.url}/api` }, 'hello through the proxy');
      expect(page.passthroughTypes.length).toBeGreaterThan(0);
      expect(new Set(page.passthroughTypes)).toEqual(new Set(['text/plain;charset=UTF-8']));
    });
  });

  describe('at a deployed revision through the gateway (its http.cors names the page’s origin)', () => {
    let platform: TestPlatform;
    let key: string;
    let apiUrl: string;
    let direct: ChatPage;
    let proxied: ChatPage;
    let elsewhere: ChatPage;

    beforeAll(async () => {
      direct = await startChatPage();
      elsewhere = await startChatPage();
      platform = await startControlPlanePlatform();
      const tenant = await buildTenant(platform.system);
      key = tenant.adminKey;
      const api = controlPlaneApi(platform.url, { key, tenant: tenant.workspace.id });
      // Headers listed: the platform key's is allowed beside them (the page sends it to the gateway).
      const config = { graphs: { chat: './chat.ts:graph' }, http: { cors: { allow_origins: [direct.url], allow_headers: ['Content-Type'] } } };
      const repo = makeGitRepo({ 'langgraph.json': JSON.stringify(config), 'chat.ts': CHAT_GRAPH, 'package.json': JSON.stringify({ private: true, type: 'module' }) });
      const created = await api('POST', '/v2/deployments', { body: deploymentBody(repo.url, { name: 'chat-ui' }) });
      expect(created.status).toBe(201);
      const revision = await waitForRevision(api, created.body.id, created.body.latest_revision_id);
      expect(revision.status).toBe('DEPLOYED');
      apiUrl = `${platform.url}/deployments/${created.body.id}`;
      proxied = await startChatPage({ passthrough: { apiUrl, apiKey: key } });
    }, 240_000);
    afterAll(async () => {
      await direct?.stop();
      await elsewhere?.stop();
      await proxied?.stop();
      await stopControlPlanePlatform(platform);
    });

    it('straight from the page, cross-origin, with the platform key', async () => {
      await chatRoundTrip(browser, direct.url, { apiUrl, apiKey: key }, 'hello deployment');
    });

    it('through the UI’s passthrough, which holds the key and forwards bodies as text/plain', async () => {
      await chatRoundTrip(browser, proxied.url, { apiUrl: `${proxied.url}/api` }, 'hello deployment through the proxy');
      expect(new Set(proxied.passthroughTypes)).toEqual(new Set(['text/plain;charset=UTF-8']));
    });

    it('not from a page of an origin its http.cors does not name', async () => {
      const context = await browser.newContext();
      const page = await context.newPage();
      try {
        await page.goto(`${elsewhere.url}/?${new URLSearchParams({ apiUrl, apiKey: key })}`);
        await expect.poll(async () => (await seenBy(page)).errors, { timeout: 20_000 }).toEqual(['Failed to fetch']);
        expect(await page.locator('#status').innerText()).toBe('connecting');
      } finally {
        await context.close();
      }
    });
  });
});
