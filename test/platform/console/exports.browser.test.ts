// The console's exports page in headless Chromium against the real platform, its export workers and
// s3rver: destinations without their credentials, an export started from the page whose rows and files
// grow on screen as its runs write Parquet files, a failed run's error, and nothing of it for another
// organization (none at all for one whose plan has no bulk export).
import { DeleteBucketCommand } from '@aws-sdk/client-s3';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTenant } from '../../support/factories.js';
import { graphql, startTestPlatform, type TestPlatform } from '../../support/helpers.js';
import { ingestFixtureTraces, type S3Server, startS3, takeTurnWithExportWorkers } from '../../support/exports.js';
import { launchChromium, ReceivedAnswers, shot, signIn, skipped, skipReason } from './support.js';

if (skipped) console.warn(`Console exports browser test skipped: ${skipReason}`);

const PROJECT = 'console-export';
const CREATE_DESTINATION = `mutation($name: String!, $config: ExportDestinationConfigInput!, $credentials: ExportCredentialsInput) {
  createExportDestination(displayName: $name, config: $config, credentials: $credentials) {
    ... on MutationCreateExportDestinationSuccess { data { id } } ... on AppError { code message } } }`;

describe.skipIf(skipped)('the console’s exports page in headless Chromium', () => {
  takeTurnWithExportWorkers();
  let platform: TestPlatform;
  let s3: S3Server;
  let tenant: Awaited<ReturnType<typeof buildTenant>>;
  let browser: Browser;
  let runCount: number;

  beforeAll(async () => {
    s3 = await startS3();
    await s3.createBucket('console');
    await s3.createBucket('console-gone');
    // Four rows a batch, a file per batch: an export of a few hundred rows writes dozens of files, one progress event each.
    platform = await startTestPlatform({ jobs: true, config: { AGENT_PLATFORM_EXPORT_BATCH_ROWS: '4', AGENT_PLATFORM_EXPORT_FILE_SIZE: '1b' } });
    tenant = await buildTenant(platform.system, { planTier: 'enterprise' });
    ({ runCount } = await ingestFixtureTraces(platform.deps, tenant.workspace.id, PROJECT, { '2026-03-01': 120, '2026-03-02': 80 }));
    for (const [name, bucket] of [
      ['lake', 'console'],
      ['soon gone', 'console-gone'],
    ]) {
      const created = await graphql(platform.url, CREATE_DESTINATION, {
        key: tenant.adminKey,
        tenant: tenant.workspace.id,
        variables: { name, config: { bucketName: bucket, endpointUrl: s3.endpoint, prefix: 'traces' }, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } },
      });
      expect(created.body.data.createExportDestination.data.id).toBeDefined();
    }
    // The second destination's bucket goes away after it was checked: its exports fail on their first write.
    await s3.client.send(new DeleteBucketCommand({ Bucket: 'console-gone' }));
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await platform?.stop();
    await s3?.stop();
  });

  async function startExport(page: Page, destination: string) {
    await page.getByLabel('Project').selectOption({ label: PROJECT });
    await page.getByLabel('Destination').selectOption({ label: destination });
    await page.getByLabel('From (UTC)').fill('2026-03-01');
    await page.getByLabel('To (UTC, exclusive)').fill('2026-03-03');
    await page.getByRole('button', { name: 'Start export' }).click();
    await expect.poll(() => new URL(page.url()).hash).toMatch(/export=[0-9a-f-]{36}/);
    return new URLSearchParams(new URL(page.url()).hash.split('?')[1]).get('export')!;
  }

  it('lists destinations without credentials and shows an export’s rows and files growing live until it completes', async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    const answers = new ReceivedAnswers();
    answers.watch(page);
    await signIn(page, platform.url, tenant.adminKey);
    await page.getByRole('link', { name: 'Exports' }).click();
    const destinations = page.getByRole('table', { name: /Export destinations/ });
    await expect.poll(() => destinations.getByRole('row').count()).toBe(3);
    expect(await destinations.innerText()).toMatch(/lake\ts3\tconsole\ttraces\thttp:\/\/127\.0\.0\.1:\d+\tstored \(never shown\)/);

    const exportId = await startExport(page, 'lake');
    // Every rows figure the export's card shows, from its first to its last, and a mark a reload would wipe.
    await page.evaluate((id) => {
      const rows: string[] = [];
      Object.assign(window, { consoleTest: { rows, loadedOnce: true } });
      const record = () => {
        const text = document.querySelector(`#export-${id} .export-figures`)?.textContent?.trim();
        if (text && rows.at(-1) !== text) rows.push(text);
      };
      record();
      new MutationObserver(record).observe(document.body, { subtree: true, childList: true, characterData: true });
    }, exportId);
    const card = page.locator(`#export-${exportId}`);
    await expect.poll(() => card.locator('summary .badge').innerText(), { timeout: 60_000, interval: 200 }).toBe('Completed');
    const figures = await page.evaluate(() => (window as unknown as { consoleTest: { rows: string[] } }).consoleTest.rows);
    const rowsOf = (text: string) => Number(/([\d,]+) rows/.exec(text)![1]!.replace(/,/g, ''));
    const filesOf = (text: string) => Number(/([\d,]+) files/.exec(text)![1]!.replace(/,/g, ''));
    // Live: the figures changed on screen several times, never going back, ending at every run exported.
    expect(figures.length).toBeGreaterThanOrEqual(3);
    expect(figures.map(rowsOf)).toEqual([...figures.map(rowsOf)].sort((a, b) => a - b));
    expect(rowsOf(figures.at(-1)!)).toBe(runCount);
    expect(figures.map(filesOf)).toEqual([...figures.map(filesOf)].sort((a, b) => a - b));
    expect(filesOf(figures.at(-1)!)).toBeGreaterThan(2);
    expect(figures.at(-1)).toContain('2/2 runs finished');
    expect(await page.evaluate(() => (window as unknown as { consoleTest?: { loadedOnce?: boolean } }).consoleTest?.loadedOnce)).toBe(true);
    // Each day's run, its rows and files.
    const runs = card.getByRole('table', { name: /Runs of the export/ });
    expect(await runs.getByRole('row').allInnerTexts()).toEqual([
      expect.stringMatching(/^Day\tStatus\tRows/),
      expect.stringMatching(/^2026-03-01\tCompleted\t120\t\d+\t0\t?$/),
      expect.stringMatching(/^2026-03-02\tCompleted\t80\t\d+\t0\t?$/),
    ]);
    await shot(page, 'exports');
    expect(await answers.text()).not.toContain('S3RVER');
    await context.close();
  }, 90_000);

  it('shows a failed run’s error', async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    await signIn(page, platform.url, tenant.adminKey);
    await page.getByRole('link', { name: 'Exports' }).click();
    const exportId = await startExport(page, 'soon gone');
    const card = page.locator(`#export-${exportId}`);
    await expect.poll(() => card.locator('summary .badge').innerText(), { timeout: 60_000, interval: 200 }).toBe('Failed');
    await expect.poll(() => card.getByRole('table', { name: /Runs of the export/ }).innerText()).toMatch(/attempt 0: .*Bucket is not valid/);
    expect(await card.locator('summary').innerText()).toMatch(/with errors/);
    await shot(page, 'exports-failed');
    await context.close();
  }, 90_000);

  it('shows another organization none of the destinations or exports, a read-only key no form to start one, and a plan without bulk export no Exports page', async () => {
    const other = await buildTenant(platform.system, { planTier: 'enterprise' });
    const context = await browser.newContext();
    const page = await context.newPage();
    const answers = new ReceivedAnswers();
    answers.watch(page);
    await signIn(page, platform.url, other.adminKey);
    await page.getByRole('link', { name: 'Exports' }).click();
    await page.getByText('No destinations yet').waitFor();
    await page.getByText('No exports yet.').waitFor();
    const received = await answers.text();
    expect(received).not.toContain('lake');
    expect(received).not.toContain(PROJECT);

    // The workspace's viewer: its exports, and no form to start one.
    const reader = await context.newPage();
    await signIn(reader, platform.url, tenant.viewerKey);
    await reader.getByRole('link', { name: 'Exports' }).click();
    await expect.poll(() => reader.locator('details.export').count()).toBe(2);
    expect(await reader.getByRole('button', { name: 'Start export' }).count()).toBe(0);

    const free = await buildTenant(platform.system, { planTier: 'free' });
    const freePage = await context.newPage();
    const requests: string[] = [];
    freePage.on('request', (request) => requests.push(request.postData() ?? ''));
    await signIn(freePage, platform.url, free.adminKey);
    await freePage.getByRole('link', { name: 'Deployments' }).waitFor();
    expect(await freePage.getByRole('link', { name: 'Exports' }).count()).toBe(0);
    await freePage.goto(`${platform.url}/#/exports`);
    await freePage.getByRole('heading', { name: 'Tracing projects' }).waitFor();
    expect(requests.filter((body) => body.includes('bulkExports'))).toEqual([]);
    await context.close();
  }, 60_000);
});
