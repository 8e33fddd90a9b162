// The web console as a person uses it, in headless Chromium against the real platform: sign in with
// an API key, read the tracing projects, a project's runs, narrow them with a filter (and see where a
// broken filter went wrong), open a trace's tree and a run's detail, read the usage chart and download
// its CSV; and another workspace's key sees none of it. Chromium is Debian's package, installed by
// scripts/test-prereqs.mjs (`npm test` runs it first).
// CONSOLE_SCREENSHOTS=<folder> keeps a screenshot of each page there.
import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../src/ids.js';
import { foldUsageDeltas } from '../../../src/platform/services/usage/usage.service.js';
import { buildTenant, buildUser, buildApiKey, buildWorkspace } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { launchChromium, ReceivedAnswers, shot, signIn as signInAt, skipped, skipReason } from './support.js';

if (skipped) console.warn(`Console browser test skipped: ${skipReason}`);
const PROJECT = 'console-demo';

describe.skipIf(skipped)(`the web console in headless Chromium${skipped ? ` (skipped: ${skipReason})` : ''}`, () => {
  let platform: TestPlatform;
  let tenant: Awaited<ReturnType<typeof buildTenant>>;
  let other: Awaited<ReturnType<typeof buildTenant>>;
  let browser: Browser;
  let projectId: string;
  const root = newId();
  const model = newId();
  const tool = newId();

  beforeAll(async () => {
    platform = await startTestPlatform();
    tenant = await buildTenant(platform.system);
    other = await buildTenant(platform.system);
    // A trace of an agent: a chain calling a chat model, then a tool that failed; and five more traces.
    const t0 = Date.now() - 60 * 60_000;
    const at = (ms: number) => new Date(t0 + ms).toISOString();
    const question = 'What is the capital of France?';
    const batch = {
      post: [
        { id: root, trace_id: root, name: 'agent', run_type: 'chain', start_time: at(0), end_time: at(1_500), session_name: PROJECT, inputs: { question }, outputs: { answer: 'Paris' } },
        {
          id: model, trace_id: root, parent_run_id: root, name: 'ChatModel', run_type: 'llm', start_time: at(100), end_time: at(900), session_name: PROJECT,
          inputs: { messages: [[{ role: 'system', content: 'Answer briefly.' }, { role: 'user', content: question }]] },
          outputs: { generations: [[{ text: 'Paris', message: { type: 'ai', content: 'The capital of France is Paris.' } }]], usage_metadata: { input_tokens: 21, output_tokens: 9, total_tokens: 30 } },
          extra: { metadata: { ls_model_name: 'test-model' } },
        },
        { id: tool, trace_id: root, parent_run_id: root, name: 'search', run_type: 'tool', start_time: at(1_000), end_time: at(1_400), session_name: PROJECT, inputs: { query: 'capital' }, error: 'TimeoutError: search took too long' },
        ...Array.from({ length: 5 }, (_, i) => ({ id: newId(), name: `solo-${i}`, run_type: 'chain', start_time: at(10_000 + i * 1_000), end_time: at(10_500 + i * 1_000), session_name: PROJECT })),
      ],
    };
    const response = await fetch(`${platform.url}/runs/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': tenant.adminKey },
      body: JSON.stringify(batch),
    });
    expect(response.status).toBeLessThan(300);
    const feedback = await fetch(`${platform.url}/feedback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': tenant.adminKey },
      body: JSON.stringify({ run_id: model, key: 'correctness', score: 1, comment: 'Right, and brief.' }),
    });
    expect(feedback.status).toBe(200);
    await foldUsageDeltas(platform.deps);
    const { rows } = await platform.deps.db.pool.query('SELECT id FROM tracing_projects WHERE workspace_id = $1 AND name = $2', [tenant.workspace.id, PROJECT]);
    projectId = rows[0].id;
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await platform?.stop();
  });

  const signIn = (page: Page, key: string) => signInAt(page, platform.url, key);

  it('signs in and walks projects, runs, a filter, a trace and a run, keeping the key out of URLs and storage other than the session', async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    const urls: string[] = [];
    page.on('request', (request) => urls.push(request.url()));
    const caching = new Map<string, string | undefined>();
    page.on('response', (response) => caching.set(new URL(response.url()).pathname, response.headers()['cache-control']));
    await signIn(page, tenant.adminKey);
    // The page is revalidated; its hashed assets, from this server only, are cached for a year.
    expect(caching.get('/')).toBe('no-cache');
    const assets = [...caching].filter(([path]) => path.startsWith('/console/assets/'));
    expect(assets.length).toBeGreaterThanOrEqual(2);
    for (const [path, header] of assets) expect([path, header]).toEqual([expect.stringMatching(/-[\w-]{8}\.(js|css)$/), 'public, max-age=31536000, immutable']);
    expect(urls.filter((url) => !url.startsWith(platform.url))).toEqual([]);

    // Projects: the run count (8 runs), error rate (0 of 6 traces failed: the error is a child's) and latency.
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: PROJECT }) });
    await expect.poll(() => row.count()).toBe(1);
    const cells = await row.getByRole('cell').allInnerTexts();
    expect(cells[0]).toBe('8');
    expect(cells[1]).toBe('0.0 %');
    expect(cells[2]).toMatch(/^\d+ ms$/);
    await shot(page, 'projects');

    // Runs: traces newest first.
    await row.getByRole('link', { name: PROJECT }).click();
    await page.getByRole('heading', { name: PROJECT }).waitFor();
    const names = () => page.locator('table.runs tbody th').allInnerTexts();
    await expect.poll(names).toEqual(['solo-4', 'solo-3', 'solo-2', 'solo-1', 'solo-0', 'agent']);
    // The agent trace's tokens are its chat model's, rolled up to the root (Type … Latency, Tokens).
    const agentRow = page.locator('table.runs tbody tr').filter({ has: page.getByRole('link', { name: 'agent', exact: true }) });
    expect((await agentRow.locator('td').allInnerTexts())[4]).toBe('30');
    await shot(page, 'runs');

    // A filter narrows the runs, and lands in the URL so the view can be linked to.
    const filter = page.getByLabel('Filter', { exact: true });
    await filter.fill('eq(name, "solo-1")');
    await filter.press('Enter');
    await expect.poll(names).toEqual(['solo-1']);
    expect(new URLSearchParams(new URL(page.url()).hash.split('?')[1]).get('filter')).toBe('eq(name, "solo-1")');

    // A broken filter: the platform's message, a caret under the position, the text cursor put there.
    await filter.fill('eq(name, "agent"');
    await filter.press('Enter');
    const alert = page.locator('#run-filter-error');
    await expect.poll(() => alert.innerText()).toMatch(/Invalid filter at position 16/);
    expect(await page.locator('pre.caret').innerText()).toBe(`eq(name, "agent"\n${' '.repeat(16)}^`);
    expect(await filter.getAttribute('aria-invalid')).toBe('true');
    expect(await filter.evaluate((element: HTMLTextAreaElement) => [document.activeElement === element, element.selectionStart])).toEqual([true, 16]);
    await shot(page, 'runs-filter-error');

    // The trace: a tree in execution order, with depth, durations, tokens and the failed tool.
    await filter.fill('');
    await filter.press('Enter');
    await page.locator('table.runs').getByRole('link', { name: 'agent', exact: true }).click();
    const tree = page.getByRole('tree', { name: 'Trace tree' });
    await tree.waitFor();
    const items = tree.getByRole('treeitem');
    await expect.poll(() => items.count()).toBe(3);
    expect(await items.evaluateAll((nodes) => nodes.map((node) => [node.getAttribute('aria-level'), node.querySelector('.node-name')?.textContent?.trim()]))).toEqual([
      ['1', 'chain agent'],
      ['2', 'llm ChatModel'],
      ['2', 'tool search'],
    ]);
    expect(await items.nth(0).innerText()).toMatch(/1\.50 s · 30 tok/);
    expect(await items.nth(1).innerText()).toMatch(/800 ms · 30 tok/);
    expect(await items.nth(2).locator('.bar-error').count()).toBe(1);

    // A run's detail: the chat model's messages as a conversation, its tokens, feedback and metadata; deep-linked.
    await items.nth(1).getByRole('button').click();
    await expect.poll(() => page.url()).toContain(`run=${model}`);
    const input = page.getByRole('list', { name: 'Input messages' });
    await input.waitFor();
    expect(await input.getByRole('listitem').allInnerTexts()).toEqual(['SYSTEM\nAnswer briefly.', 'USER\nWhat is the capital of France?']);
    expect(await page.getByRole('list', { name: 'Output messages' }).innerText()).toContain('The capital of France is Paris.');
    const detail = page.locator('section.run-detail');
    expect(await detail.innerText()).toMatch(/30 \(21 in, 9 out\)/);
    expect(await detail.innerText()).toContain('ls_model_name');
    // Its feedback, as given through the API.
    expect(await detail.getByRole('table', { name: 'Feedback' }).locator('tbody tr').allInnerTexts()).toEqual([expect.stringMatching(/^correctness\s+1\s+–\s+Right, and brief\./)]);
    await shot(page, 'trace');

    // Keyboard: Down moves to the failed tool, whose error shows.
    await items.nth(1).getByRole('button').focus();
    await page.keyboard.press('ArrowDown');
    await expect.poll(() => detail.innerText()).toContain('TimeoutError: search took too long');

    // A deep link opens that run again after a reload (the tab's session keeps the key).
    await page.goto(`${platform.url}/#/traces/${root}?run=${tool}`);
    await page.reload();
    await expect.poll(() => page.locator('section.run-detail h2').innerText()).toMatch(/^search/);

    // The key: in sessionStorage only, never in a URL the page loaded.
    expect(await page.evaluate(() => ({ session: Object.values(sessionStorage), local: Object.keys(localStorage) }))).toEqual({
      session: expect.arrayContaining([tenant.adminKey]),
      local: [],
    });
    expect(urls.filter((url) => url.includes(tenant.adminKey))).toEqual([]);
    await context.close();
  });

  it('charts usage by project and downloads it as CSV', async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
    const page = await context.newPage();
    await signIn(page, tenant.adminKey);
    await page.getByRole('link', { name: 'Usage' }).click();
    await page.getByLabel('Group by').selectOption('PROJECT');
    const totals = page.getByRole('table', { name: /Traces in the range by project/ });
    await expect.poll(() => totals.getByRole('row').allInnerTexts()).toEqual(['Project\tTraces', `${PROJECT}\t6`]);
    // The chart: a canvas with the project as its one series.
    await expect.poll(() => page.locator('.chart canvas').count()).toBe(1);
    expect(await page.locator('.chart .u-legend').innerText()).toContain(PROJECT);
    await shot(page, 'usage');

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
    const csv = readFileSync((await download.path())!, 'utf8').trim().split('\r\n');
    expect(csv[0]).toBe('Time Bucket Start,Time Bucket End,Workspace ID,Workspace Name,Project ID,Project Name,User ID,User Email,API Key Short Key,Traces');
    expect(csv.slice(1).map((line) => line.split(',').slice(4, 6).concat(line.split(',').slice(-1))).reduce((sum, [id, name, count]) => {
      expect([id, name]).toEqual([projectId, PROJECT]);
      return sum + Number(count);
    }, 0)).toBe(6);
    await context.close();
  });

  it('switches workspaces, and shows another workspace or organization none of its projects, runs or traces', async () => {
    // A second workspace of the same organization, with a project of its own.
    const second = await buildWorkspace(platform.system, tenant.organization.id, 'Second workspace');
    await fetch(`${platform.url}/runs/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': tenant.adminKey, 'x-tenant-id': second.id },
      body: JSON.stringify({ post: [{ id: newId(), name: 'elsewhere', run_type: 'chain', start_time: new Date().toISOString(), session_name: 'second-project' }] }),
    });
    const context = await browser.newContext({ viewport: { width: 420, height: 900 } });
    const page = await context.newPage();
    await signIn(page, tenant.adminKey);
    await page.getByRole('link', { name: PROJECT }).waitFor();
    await page.getByLabel('Workspace').selectOption(second.id);
    await page.getByRole('link', { name: 'second-project' }).waitFor();
    expect(await page.getByRole('link', { name: PROJECT }).count()).toBe(0);
    await shot(page, 'narrow-second-workspace');

    // A key of a user who is a member of the first workspace only: one workspace to choose from.
    const member = await buildUser(platform.system, tenant.organization.id, { workspaces: [{ workspaceId: tenant.workspace.id, role: 'WORKSPACE_VIEWER' }] });
    const memberKey = await buildApiKey(platform.system, tenant.organization.id, member.id);
    const memberPage = await context.newPage();
    await signIn(memberPage, memberKey.key);
    await memberPage.getByRole('link', { name: PROJECT }).waitFor();
    expect(await memberPage.getByLabel('Workspace').locator('option').allInnerTexts()).toEqual([tenant.workspace.name]);
    await context.close();

    // Another organization's key: not the project in its list, and its links answer "not found".
    const outsider = await browser.newContext();
    const outside = await outsider.newPage();
    const answers = new ReceivedAnswers();
    answers.watch(outside);
    await signIn(outside, other.adminKey);
    await outside.getByRole('heading', { name: 'Tracing projects' }).waitFor();
    await outside.getByText(/No tracing projects/).waitFor();
    await outside.goto(`${platform.url}/#/projects/${projectId}`);
    await outside.getByText(`Project ${projectId} not found.`).first().waitFor();
    await outside.goto(`${platform.url}/#/traces/${root}`);
    await outside.getByText(`No trace ${root} in this workspace.`).waitFor();
    const received = await answers.text();
    expect(received).not.toContain(PROJECT);
    expect(received).not.toContain('ChatModel');
    await outsider.close();
  });
});
