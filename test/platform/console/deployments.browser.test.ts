// The console's deployments pages in headless Chromium against the real platform and its real
// pipeline (a git repository made here, built and started in its sandbox): a deployment created from
// the form, its revision's status moving on screen without a reload, its build and deploy logs, secret
// names without values; a message sent to the deployed chat graph streamed token by token; and none of
// it shown to another workspace.
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant, buildWorkspace } from '../../support/factories.js';
import type { TestPlatform } from '../../support/helpers.js';
import { makeGitRepo, startControlPlanePlatform, stopControlPlanePlatform } from '../../support/deployments.js';
import { launchChromium, ReceivedAnswers, shot, signIn, skipped, skipReason } from './support.js';

if (skipped) console.warn(`Console deployments browser test skipped: ${skipReason}`);

const NAME = 'console-chat';
const SECRET_VALUE = 'sekret-value-8f3a';
const REPLY = 'Paris is the capital of France, on the Seine.';

/** A chat graph whose fake model streams its reply a character at a time, 30 ms apart, like a real one. */
const CHAT_GRAPH = {
  'langgraph.json': JSON.stringify({ graphs: { chat: './chat.ts:graph' } }),
  'chat.ts': `
import { AIMessage } from '@langchain/core/messages';
import { FakeStreamingChatModel } from '@langchain/core/utils/testing';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';

console.log('chat graph loaded');

export const graph = new StateGraph(MessagesAnnotation)
  .addNode('reply', async (state) => {
    console.log('replying to message ' + state.messages.length);
    const model = new FakeStreamingChatModel({ sleep: 30, responses: [new AIMessage(${JSON.stringify(REPLY)})] });
    return { messages: [await model.invoke(state.messages)] };
  })
  .addEdge(START, 'reply')
  .addEdge('reply', END)
  .compile();
`,
};

describe.skipIf(skipped)('the console’s deployments pages in headless Chromium', () => {
  let platform: TestPlatform;
  let tenant: Awaited<ReturnType<typeof buildTenant>>;
  let other: Awaited<ReturnType<typeof buildTenant>>;
  let browser: Browser;
  let deploymentId: string;
  const repo = makeGitRepo(CHAT_GRAPH);
  // Every GraphQL answer the tenant's pages received: a secret value must be in none.
  const answers = new ReceivedAnswers();

  beforeAll(async () => {
    platform = await startControlPlanePlatform();
    tenant = await buildTenant(platform.system);
    other = await buildTenant(platform.system);
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await stopControlPlanePlatform(platform);
  });

  async function tenantPage(width = 1400): Promise<Page> {
    const context = await browser.newContext({ viewport: { width, height: 900 } });
    const page = await context.newPage();
    answers.watch(page);
    await signIn(page, platform.url, tenant.adminKey);
    return page;
  }

  it('creates a deployment from a git URL and ref; its revision’s status moves on screen without a reload, its logs appear, its secrets by name only', async () => {
    const page = await tenantPage();
    await page.getByRole('link', { name: 'Deployments' }).click();
    await page.getByText('No deployments in this workspace yet.').waitFor();
    await page.getByRole('link', { name: 'New deployment' }).click();
    await page.getByLabel('Name', { exact: true }).fill(NAME);
    await page.getByLabel('Git URL').fill(repo.url);
    await page.getByLabel('Ref').fill('main');
    await page.getByRole('button', { name: 'Add a secret' }).click();
    await page.getByLabel('Secret name').fill('CHAT_SECRET');
    await page.getByLabel('Secret value').fill(SECRET_VALUE);
    await shot(page, 'deployment-new');
    await page.getByRole('button', { name: 'Create deployment' }).click();
    await page.getByRole('heading', { name: NAME }).waitFor();
    deploymentId = new URL(page.url()).hash.split('/')[2]!;

    // From here on, every status the newest revision shows, in order, and a mark a reload would wipe.
    // And the status each time the build log grew: lines shown while the revision was still building.
    await page.evaluate(() => {
      const seen: string[] = [];
      const logGrew: { lines: number; status: string }[] = [];
      Object.assign(window, { consoleTest: { seen, logGrew, loadedOnce: true } });
      const record = () => {
        const status = document.querySelector('table.revisions tbody tr .badge')?.textContent;
        if (status && seen.at(-1) !== status) seen.push(status);
        const lines = (document.querySelector('pre.log[aria-label="Build log"]')?.textContent ?? '').split('\n').filter((line) => line && !line.startsWith('Waiting')).length;
        if (status && lines > (logGrew.at(-1)?.lines ?? 0)) logGrew.push({ lines, status });
      };
      record();
      new MutationObserver(record).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    const seen = () => page.evaluate(() => (window as unknown as { consoleTest: { seen: string[] } }).consoleTest.seen);
    if (!(await seen()).includes('DEPLOYED')) await shot(page, 'deployment-building');
    await expect.poll(seen, { timeout: 150_000, interval: 200 }).toContain('DEPLOYED');
    const statuses = await seen();
    const order = ['CREATING', 'QUEUED', 'AWAITING_BUILD', 'BUILDING', 'AWAITING_DEPLOY', 'DEPLOYING', 'DEPLOYED'];
    // It moved on screen: at least one status before DEPLOYED, each later in the pipeline than the one before.
    expect(statuses.length).toBeGreaterThanOrEqual(2);
    expect(statuses.map((status) => order.indexOf(status))).toEqual([...statuses.map((status) => order.indexOf(status))].sort((a, b) => a - b));
    expect(statuses.every((status) => order.includes(status))).toBe(true);
    expect(await page.evaluate(() => (window as unknown as { consoleTest?: { loadedOnce?: boolean } }).consoleTest?.loadedOnce)).toBe(true);

    // The logs, as written: the build's result and the runtime's start (the graph's own output too).
    const buildLog = page.getByRole('log', { name: 'Build log' });
    const deployLog = page.getByRole('log', { name: 'Deploy log' });
    await expect.poll(() => buildLog.innerText(), { timeout: 15_000 }).toContain('Build succeeded: graphs chat');
    await expect.poll(() => deployLog.innerText(), { timeout: 15_000 }).toContain('Deployed');
    expect(await buildLog.innerText()).toContain('chat graph loaded');
    // As they are written: the build log had lines on screen before the revision was deployed.
    const logGrew = await page.evaluate(() => (window as unknown as { consoleTest: { logGrew: { lines: number; status: string }[] } }).consoleTest.logGrew);
    expect(logGrew.some((step) => step.status !== 'DEPLOYED')).toBe(true);
    // The graph the revision loaded, and the active revision marked as serving.
    const latest = page.locator('table.revisions tbody tr').first();
    await expect.poll(() => latest.innerText()).toMatch(/\(serving\)[\s\S]*chat/);

    // Secrets: the name, never the value, on the page or in any answer the page received.
    expect(await page.getByRole('list', { name: 'Secret names' }).innerText()).toBe('CHAT_SECRET');
    expect(await page.content()).not.toContain(SECRET_VALUE);
    await shot(page, 'deployment');

    // Another ref deployed from the page: its revision appears at the top and moves to DEPLOYED live,
    // and takes over serving from the first.
    repo.commit('v2', { 'NOTES.md': 'the second revision\n' });
    await page.getByLabel('Deploy ref').fill('v2');
    await page.getByRole('button', { name: 'Deploy', exact: true }).click();
    const rows = page.locator('table.revisions tbody tr');
    await expect.poll(() => rows.count()).toBe(2);
    await expect.poll(() => rows.first().innerText(), { timeout: 150_000, interval: 200 }).toMatch(/\(serving\)\s+DEPLOYED\s+v2/);
    expect(await rows.nth(1).innerText()).not.toContain('(serving)');
    expect(await page.evaluate(() => (window as unknown as { consoleTest?: { loadedOnce?: boolean } }).consoleTest?.loadedOnce)).toBe(true);

    // The list: the deployment with its latest revision's status.
    await page.getByRole('link', { name: 'All deployments' }).click();
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: NAME }) });
    await expect.poll(() => row.innerText()).toContain('DEPLOYED');
    expect(await row.innerText()).toContain(repo.url);
    await shot(page, 'deployments');
    expect(await answers.text()).not.toContain(SECRET_VALUE);
    await page.context().close();
  }, 240_000);

  it('streams a message sent to the deployed assistant token by token, then shows the thread with its state and runs', async () => {
    expect(deploymentId).toBeDefined();
    // The deployment's page open in another tab: its deploy log follows the runtime's output.
    const watching = await tenantPage();
    await watching.goto(`${platform.url}/#/deployments/${deploymentId}`);
    await watching.getByRole('log', { name: 'Deploy log' }).getByText('Deployed').waitFor();
    const page = await tenantPage();
    await page.goto(`${platform.url}/#/deployments/${deploymentId}/threads`);
    await page.getByRole('heading', { name: 'New thread' }).waitFor();
    await expect.poll(() => page.getByLabel('Assistant').locator('option').allInnerTexts()).toEqual(['chat']);

    // Every text the reply in progress shows, in order.
    await page.evaluate(() => {
      const texts: string[] = [];
      Object.assign(window, { consoleTest: { texts } });
      new MutationObserver(() => {
        const text = document.querySelector('.conversation.live .message-assistant .content')?.textContent;
        if (text && texts.at(-1) !== text) texts.push(text);
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    await page.getByLabel('Message').fill('What is the capital of France?');
    await page.getByRole('button', { name: 'Send' }).click();
    const texts = () => page.evaluate(() => (window as unknown as { consoleTest: { texts: string[] } }).consoleTest.texts);
    await expect.poll(async () => (await texts()).length, { timeout: 30_000, interval: 50 }).toBeGreaterThanOrEqual(5);
    await shot(page, 'threads-streaming');
    await expect.poll(texts, { timeout: 30_000 }).toContain(REPLY);
    const shown = await texts();
    // Token by token: many partial texts, each growing the one before, before the whole reply.
    expect(shown.length).toBeGreaterThanOrEqual(10);
    expect(shown.at(-1)).toBe(REPLY);
    for (let i = 1; i < shown.length; i++) expect(shown[i]!.startsWith(shown[i - 1]!) && shown[i]!.length > shown[i - 1]!.length).toBe(true);
    expect(shown[0]!.length).toBeLessThan(REPLY.length / 2);

    // The run ends: the thread is in the URL and the list, idle, its conversation read from its state.
    await expect.poll(() => new URL(page.url()).hash).toMatch(/thread=[0-9a-f-]{36}/);
    const conversation = page.getByRole('list', { name: 'Conversation' });
    await expect.poll(() => conversation.getByRole('listitem').allInnerTexts(), { timeout: 15_000 }).toEqual([
      'USER\nWhat is the capital of France?',
      `ASSISTANT\n${REPLY}`,
    ]);
    const threads = page.getByRole('navigation', { name: 'Threads' });
    await expect.poll(() => threads.getByRole('listitem').allInnerTexts()).toEqual([expect.stringMatching(/idle[\s\S]*chat · last run success/)]);
    await expect.poll(() => page.getByRole('table', { name: /Runs of the thread/ }).getByRole('row').count()).toBe(2);
    expect(await page.getByRole('table', { name: /Runs of the thread/ }).innerText()).toContain('success');
    await expect.poll(() => page.locator('section.thread').innerText()).toContain('State: done');
    await shot(page, 'threads');
    await page.setViewportSize({ width: 420, height: 900 });
    await shot(page, 'threads-narrow');
    await page.setViewportSize({ width: 1400, height: 900 });

    // A second message on the same thread: the conversation grows to four messages.
    await page.getByLabel('Message').fill('And of Italy?');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => conversation.getByRole('listitem').count(), { timeout: 30_000 }).toBe(4);
    await page.context().close();

    // What the graph printed while it ran reached the other tab's deploy log, without a reload.
    await expect.poll(() => watching.getByRole('log', { name: 'Deploy log' }).innerText(), { timeout: 15_000 }).toMatch(/replying to message 1\n[\s\S]*replying to message 3/);
    await watching.context().close();
  }, 120_000);

  it('shows another workspace or organization none of the deployment, its revisions, threads or replies, and a read-only key no form that writes', async () => {
    expect(deploymentId).toBeDefined();
    // Not what the deployment's own workspace shows, which a key of its organization opens first
    // (its tracing project, named after the deployment, holds the deployed runs' traces).
    const seenByOthers = new ReceivedAnswers((response) => response.request().headers()['x-tenant-id'] !== tenant.workspace.id);
    const watch = (page: Page) => seenByOthers.watch(page);

    // Another organization's key: an empty list, and the deployment's links answer "not found".
    const outsider = await browser.newContext();
    const outside = await outsider.newPage();
    watch(outside);
    await signIn(outside, platform.url, other.adminKey);
    await outside.getByRole('link', { name: 'Deployments' }).click();
    await outside.getByText('No deployments in this workspace yet.').waitFor();
    await outside.goto(`${platform.url}/#/deployments/${deploymentId}`);
    await outside.getByText(/not found/).first().waitFor();
    await outside.goto(`${platform.url}/#/deployments/${deploymentId}/threads`);
    await outside.getByText(/not found/).first().waitFor();
    expect(await outside.getByLabel('Assistant').locator('option').count()).toBe(0);
    await seenByOthers.text(); // every answer read before its page closes
    await outsider.close();

    // A second workspace of the same organization, chosen in the switcher: not there either.
    const second = await buildWorkspace(platform.system, tenant.organization.id, 'Deployments elsewhere');
    const context = await browser.newContext();
    const page = await context.newPage();
    watch(page);
    await signIn(page, platform.url, tenant.adminKey);
    await page.getByLabel('Workspace').selectOption(second.id);
    await page.getByRole('link', { name: 'Deployments' }).click();
    await page.getByText('No deployments in this workspace yet.').waitFor();
    await page.goto(`${platform.url}/#/deployments/${deploymentId}`);
    await page.getByText(/not found/).first().waitFor();
    await seenByOthers.text();
    await context.close();

    // A workspace viewer's key: the deployment, its revisions and threads, and none of the forms that
    // would write (its key may not), nor a request of theirs.
    const readOnly = await browser.newContext();
    const reader = await readOnly.newPage();
    const sent: string[] = [];
    reader.on('request', (request) => sent.push(request.postData() ?? ''));
    await signIn(reader, platform.url, tenant.viewerKey);
    await reader.getByRole('link', { name: 'Deployments' }).click();
    await reader.getByRole('link', { name: NAME }).waitFor();
    expect(await reader.getByRole('link', { name: 'New deployment' }).count()).toBe(0);
    await reader.getByRole('link', { name: NAME }).click();
    await reader.getByRole('log', { name: 'Build log' }).getByText(/Build succeeded/).waitFor();
    expect(await reader.getByLabel('Deploy ref').count()).toBe(0);
    await reader.getByRole('link', { name: 'Threads and chat' }).click();
    await reader.getByText('This key may read this workspace but not run its assistants.').waitFor();
    await expect.poll(() => reader.getByRole('navigation', { name: 'Threads' }).getByRole('listitem').count()).toBe(1);
    expect(await reader.getByLabel('Message').count()).toBe(0);
    expect(sent.filter((body) => /mutation/.test(body))).toEqual([]);
    await readOnly.close();

    const text = await seenByOthers.text();
    expect(text).not.toContain(NAME);
    expect(text).not.toContain(REPLY);
    expect(text).not.toContain('CHAT_SECRET');
    expect(text).not.toContain(repo.url);
  }, 60_000);
});
