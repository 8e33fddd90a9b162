// bench:console — how long the console's traces pages take to show their content in headless
// Chromium on loopback, with a tracing project of 100k runs (--runs): the project list, the project's
// newest runs (plain and filtered), and one trace's tree with a run's detail. Each sample is a fresh
// browser context (no HTTP cache: the page's scripts are fetched and parsed too) and a warm one (the
// hashed assets cached, as on every visit after the first). Times are the page's own clock from
// navigation start until the content a person looks for is on screen (the browser's context and
// process start-up are not the page's); the platform runs as `npm start` does (embedded
// PostgreSQL, api and worker roles). Prints figures; asserts nothing.
import { parseArgs } from 'node:util';
import { type Browser, chromium, type Page } from 'playwright-core';
import { createBenchTenant, startBenchPlatform } from './tenant.js';
import { fastFillTraceRuns, uuidOf } from './trace-run-fill.js';

const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '100000' }, samples: { type: 'string', default: '7' } } });
const RUNS = Number(args.runs);
const SAMPLES = Number(args.samples);
const CHROMIUM_PATH = '/usr/bin/chromium';

type Measure = { name: string; path: string; ready: (page: Page) => Promise<unknown> };

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main() {
  const platform = await startBenchPlatform({ AGENT_PLATFORM_ROLES: 'api,worker' });
  let browser: Browser | undefined;
  try {
    const { deps } = platform;
    const tenant = await createBenchTenant(deps);
    const workspaceId = tenant.workspace.id;
    const projectId = (await deps.db.pool.query<{ id: string }>(
      `INSERT INTO tracing_projects (id, workspace_id, name, updated_at) VALUES (gen_random_uuid(), $1, 'bench-100k', now()) RETURNING id`,
      [workspaceId],
    )).rows[0]!.id;
    const filled = performance.now();
    await fastFillTraceRuns(deps.db.pool, workspaceId, [projectId], 0, RUNS);
    await deps.db.pool.query('VACUUM ANALYZE trace_runs');
    console.log(`bench:console — ${RUNS.toLocaleString('en')} runs in one project (filled in ${((performance.now() - filled) / 1000).toFixed(1)} s); ${SAMPLES} samples per page`);
    // A trace from the middle of the history (every fifth run is a root with four children).
    const traceId = (await deps.db.pool.query<{ id: string }>(`SELECT ${uuidOf(`'trace-' || ${Math.floor(RUNS / 10)}`)} AS id`)).rows[0]!.id;

    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
    const measures: Measure[] = [
      { name: 'projects (run count, error rate, latency)', path: '/#/', ready: (page) => page.locator('table.projects tbody tr').first().waitFor() },
      { name: "project's newest 50 traces", path: `/#/projects/${projectId}`, ready: (page) => page.locator('table.runs tbody tr').nth(49).waitFor() },
      {
        name: '+ filter eq(run_type, "llm"), every run',
        path: `/#/projects/${projectId}?filter=${encodeURIComponent('eq(run_type, "llm")')}&all=1`,
        ready: (page) => page.locator('table.runs tbody tr').nth(49).waitFor(),
      },
      {
        // No index serves latency: the platform walks the project's runs back in windows.
        name: '+ filter gt(latency, "4.9s") (no index)',
        path: `/#/projects/${projectId}?filter=${encodeURIComponent('gt(latency, "4.9s")')}`,
        ready: (page) => page.locator('table.runs tbody tr').first().waitFor(),
      },
      { name: 'a trace: tree, waterfall, run detail', path: `/#/traces/${traceId}`, ready: (page) => page.locator('section.run-detail h2').waitFor() },
    ];

    // Signed in as a person would be: the key in the tab's sessionStorage before the page's script runs.
    const signedIn = async () => {
      const context = await browser!.newContext({ viewport: { width: 1400, height: 900 } });
      await context.addInitScript((key: string) => sessionStorage.setItem('agent-platform.api-key', key), tenant.key);
      return context;
    };
    // Milliseconds from the navigation's start (the page's own clock) until the content is on screen.
    const load = async (page: Page, measure: Measure) => {
      await page.goto(`${platform.url}${measure.path}`, { waitUntil: 'commit' });
      await measure.ready(page).catch(async (error: unknown) => {
        await page.screenshot({ path: '/tmp/bench-console-failed.png' });
        console.error(measure.name, await page.locator('body').innerText());
        throw error;
      });
      return page.evaluate(() => performance.now());
    };
    // One untimed pass: the server's first queries plan and JIT-compile, as on any running installation.
    {
      const context = await signedIn();
      const page = await context.newPage();
      for (const measure of measures) await load(page, measure);
      await context.close();
    }

    console.log(`\n${'page'.padEnd(44)} ${'cold p50'.padStart(9)} ${'cold max'.padStart(9)} ${'warm p50'.padStart(9)} ${'warm max'.padStart(9)}`);
    for (const measure of measures) {
      const cold: number[] = [];
      const warm: number[] = [];
      for (let sample = 0; sample < SAMPLES; sample++) {
        const context = await signedIn();
        const page = await context.newPage();
        cold.push(await load(page, measure));
        // The same tab again: assets from the HTTP cache, the data asked anew.
        await page.goto('about:blank');
        warm.push(await load(page, measure));
        await context.close();
      }
      const ms = (value: number) => `${Math.round(value)} ms`.padStart(9);
      console.log(`${measure.name.padEnd(44)} ${ms(median(cold))} ${ms(Math.max(...cold))} ${ms(median(warm))} ${ms(Math.max(...warm))}`);
    }
  } finally {
    await browser?.close();
    await platform.stop();
  }
}

await main();
