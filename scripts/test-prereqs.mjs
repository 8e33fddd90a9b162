// Test prerequisites outside npm: Debian's `chromium`, which playwright-core drives for the GraphiQL
// browser test. playwright's own browser download is not used: it fetches from a CDN that fresh
// machines and CI may not reach, while Debian's package comes through apt like everything else.
// Fast when already installed (one stat); never fails the run: without root the browser test skips
// with a reason saying what to install.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const CHROMIUM_PATH = '/usr/bin/chromium';

function run(command, args) {
  const result = spawnSync(command, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    encoding: 'utf8',
  });
  if (result.status !== 0) {
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim().split('\n').slice(-15).join('\n');
    throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status ?? result.signal}):\n${output}`);
  }
}

function ensureChromium() {
  if (existsSync(CHROMIUM_PATH)) return;
  if (process.platform !== 'linux' || !existsSync('/usr/bin/apt-get')) {
    console.warn(`test-prereqs: ${CHROMIUM_PATH} not found and this is not a Debian-like system; the GraphiQL browser test will be skipped.`);
    return;
  }
  if (process.getuid?.() !== 0) {
    console.warn(
      `test-prereqs: ${CHROMIUM_PATH} not found and not running as root; the GraphiQL browser test will be skipped.\n` +
        '  Install it with: sudo apt-get install -y --no-install-recommends chromium',
    );
    return;
  }
  console.log('test-prereqs: installing Debian chromium for the GraphiQL browser test (apt-get, one time)…');
  try {
    run('apt-get', ['update', '-qq']);
    run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'chromium']);
  } catch (error) {
    // The rest of the suite does not need a browser: report and let the browser test skip.
    console.warn(`test-prereqs: could not install chromium; the GraphiQL browser test will be skipped.\n${error.message}`);
  }
}

ensureChromium();
