// The console's datasets pages in headless Chromium against the real platform: the workspace's
// datasets with their example and experiment counts, and a dataset's two evaluate() experiments side
// by side (average scores per key, then each example's outputs and scores), and a run's link to its trace;
// and the LangSmith web links the SDK prints or builds (evaluate()'s "View results at", getRunUrl,
// getProjectUrl, getDatasetUrl) open the console's page of the same thing, in the workspace they name.
import { Client } from 'langsmith';
import { evaluate } from 'langsmith/evaluation';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildTenant, buildWorkspace } from '../../support/factories.js';
import { startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { launchChromium, shot, signIn, skipped, skipReason } from './support.js';

if (skipped) console.warn(`Console datasets browser test skipped: ${skipReason}`);

describe.skipIf(skipped)('the console’s datasets pages in headless Chromium', () => {
  let platform: TestPlatform;
  let tenant: Awaited<ReturnType<typeof buildTenant>>;
  let browser: Browser;
  const experimentNames: string[] = [];
  // What evaluate() printed for people to open: "View results at <url>".
  const printedLinks: string[] = [];
  let client: Client;

  beforeAll(async () => {
    platform = await startTestPlatform();
    tenant = await buildTenant(platform.system);
    // webUrl: the SDK guesses http://localhost:3000 for a loopback endpoint; an endpoint ending in
    // /api/v1 on any other host gives it this platform's origin.
    client = new Client({ apiUrl: platform.url, webUrl: platform.url, apiKey: tenant.adminKey, callerOptions: { maxRetries: 0 } });
    const dataset = await client.createDataset('doubling', { description: 'x to 2x' });
    await client.createExamples({ datasetId: dataset.id, inputs: [1, 2, 3].map((x) => ({ x })), outputs: [1, 2, 3].map((x) => ({ y: 2 * x })) });
    const exact = ({ outputs, referenceOutputs }: { outputs?: Record<string, any>; referenceOutputs?: Record<string, any> }) => ({ key: 'exact', score: outputs?.y === referenceOutputs?.y ? 1 : 0 });
    for (const [prefix, target] of [
      ['double', (inputs: Record<string, any>) => ({ y: 2 * inputs.x })],
      ['square', (inputs: Record<string, any>) => ({ y: inputs.x * inputs.x })],
    ] as const) {
      const log = vi.spyOn(console, 'log');
      const results = await evaluate(target, { data: 'doubling', evaluators: [exact], experimentPrefix: prefix, client });
      printedLinks.push(...log.mock.calls.flatMap(([line]) => (String(line).match(/^View results at (\S+)/) ?? []).slice(1)));
      log.mockRestore();
      experimentNames.push(results.experimentName);
    }
    await client.awaitPendingTraceBatches();
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await platform?.stop();
  });

  it('lists datasets and compares a dataset’s experiments example by example', async () => {
    const page = await browser.newPage();
    await signIn(page, platform.url, tenant.adminKey);
    await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Datasets' }).click();
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'doubling' }) });
    await expect.poll(() => row.count()).toBe(1);
    expect((await row.getByRole('cell').allInnerTexts()).slice(0, 2)).toEqual(['3', '2']);
    await shot(page, 'datasets');

    await row.getByRole('link', { name: 'doubling' }).click();
    await page.getByRole('heading', { name: 'Dataset doubling' }).waitFor();
    // Average scores: doubling is always right; squaring only for x = 2 (of 1, 2, 3).
    const experiments = page.locator('table.experiments tbody tr');
    await expect.poll(() => experiments.count()).toBe(2);
    const scores = async () => (await experiments.all()).map(async (tr) => [await tr.locator('th').innerText(), (await tr.locator('td').allInnerTexts())[1]]);
    expect(await Promise.all(await scores())).toEqual([
      [experimentNames[0], '1'],
      [experimentNames[1], '0.33'],
    ]);
    // Example by example: inputs, reference, then each experiment's output and score.
    const examples = page.locator('table.comparison tbody tr');
    await expect.poll(() => examples.count()).toBe(3);
    const third = await examples.nth(2).locator('td').allInnerTexts();
    expect(third[0]).toBe('{"x":3}');
    expect(third[1]).toBe('{"y":6}');
    expect(third[2]).toMatch(/^\{"y":6\}\s+exact 1$/);
    expect(third[3]).toMatch(/^\{"y":9\}\s+exact 0$/);
    await shot(page, 'dataset-comparison');
    // A run's output links to its trace.
    await examples.nth(2).locator('td').nth(3).getByRole('link').click();
    await page.getByRole('tree', { name: 'Trace tree' }).waitFor();
  });

  it('opens the LangSmith links the SDK prints or builds on the console page of the same thing, in the workspace they name', async () => {
    expect(printedLinks).toHaveLength(2);
    const page = await browser.newPage();
    await signIn(page, platform.url, tenant.adminKey);

    // evaluate()'s "View results at": the dataset's comparison of its experiments.
    await page.goto(printedLinks[1]!);
    await page.getByRole('heading', { name: 'Dataset doubling' }).waitFor();
    await expect.poll(() => page.locator('table.experiments tbody tr').count()).toBe(2);

    // A run's link (getRunUrl names the project and the run, not its trace): the trace, that run selected.
    let run: { id: string; trace_id?: string; session_id?: string } | undefined;
    for await (const found of client.listRuns({ projectName: experimentNames[0], isRoot: true, limit: 1 })) run = found;
    await page.goto(await client.getRunUrl({ run: run as never }));
    await page.getByRole('tree', { name: 'Trace tree' }).waitFor();
    expect(new URL(page.url()).hash).toBe(`#/traces/${run!.trace_id}?run=${run!.id}`);
    expect(await page.getByRole('treeitem', { selected: true }).count()).toBe(1);

    // A project's link: its runs.
    await page.goto(await client.getProjectUrl({ projectName: experimentNames[1] }));
    await page.getByRole('heading', { name: experimentNames[1] }).waitFor();

    // A dataset of another workspace of the organization: the console switches to that workspace.
    const second = await buildWorkspace(platform.system, tenant.organization.id, 'Evaluations elsewhere');
    const elsewhere = new Client({ apiUrl: platform.url, webUrl: platform.url, apiKey: tenant.adminKey, workspaceId: second.id, callerOptions: { maxRetries: 0 } });
    await elsewhere.createProject({ projectName: 'elsewhere' }); // the SDK finds its workspace's id on a project
    const dataset = await elsewhere.createDataset('kept elsewhere');
    await page.goto(await elsewhere.getDatasetUrl({ datasetId: dataset.id }));
    await page.getByRole('heading', { name: 'Dataset kept elsewhere' }).waitFor();
    expect(await page.getByLabel('Workspace').inputValue()).toBe(second.id);
    await page.close();
  });
});
