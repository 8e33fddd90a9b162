// Console browser test plumbing: Debian's headless Chromium (installed by scripts/test-prereqs.mjs),
// the reason a file is skipped when it or the console's build is missing, signing in as a person does,
// and screenshots kept when CONSOLE_SCREENSHOTS names a folder.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium, type Page, type Response } from 'playwright-core';
import { expect } from 'vitest';

const CHROMIUM_PATH = '/usr/bin/chromium';
const chromiumMissing = !existsSync(CHROMIUM_PATH);
const consoleMissing = !existsSync(new URL('../../../console/dist/index.html', import.meta.url));
export const skipReason = chromiumMissing
  ? `${CHROMIUM_PATH} is not installed: run \`npm test\` as root (scripts/test-prereqs.mjs installs it) or \`sudo apt-get install -y --no-install-recommends chromium\``
  : 'console/dist is missing: run `npm run console:build` (npm install does it)';
export const skipped = chromiumMissing || consoleMissing;

const SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS;

export async function launchChromium(): Promise<Browser> {
  if (SCREENSHOTS) mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Keeps a full-page screenshot named `name` when CONSOLE_SCREENSHOTS is set. */
export async function shot(page: Page, name: string): Promise<void> {
  if (SCREENSHOTS) await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Opens the console at `baseUrl` and signs in with `key`, as a person types it. */
export async function signIn(page: Page, baseUrl: string, key: string): Promise<void> {
  // A step that never comes fails with its own locator, well before the test's timeout.
  page.setDefaultTimeout(10_000);
  const landing = await page.goto(`${baseUrl}/`);
  expect(landing?.status()).toBe(200);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Sections' }).waitFor();
}

/**
 * Everything the watched pages received from the platform: each GraphQL answer's body and each
 * WebSocket frame. A body is asked for as its answer arrives and awaited by `text()`, so an assertion
 * that a value is in none of them sees every answer so far, and a body still unread when its page
 * closes counts as empty instead of rejecting outside any test.
 */
export class ReceivedAnswers {
  private readonly pending: Promise<string>[] = [];
  constructor(private readonly keep: (response: Response) => boolean = () => true) {}

  watch(page: Page): Page {
    page.on('response', (response) => {
      if (response.url().endsWith('/graphql') && this.keep(response)) this.pending.push(response.text().catch(() => ''));
    });
    page.on('websocket', (socket) => socket.on('framereceived', (frame) => this.pending.push(Promise.resolve(String(frame.payload)))));
    return page;
  }

  async text(): Promise<string> {
    return (await Promise.all(this.pending)).join('\n');
  }
}
