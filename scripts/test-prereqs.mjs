// Test prerequisites outside npm, from Debian's packages (debian-packages.mjs): `chromium`, which
// playwright-core drives for the browser tests (playwright's own browser download fetches from a CDN
// that fresh machines and CI may not reach), and `bubblewrap`, the sandbox of deployed code, which the
// control-plane tests deploy into. Without root the browser tests skip, saying what to install.
import { ensureBubblewrap, ensureSandboxNetwork, ensureDebianPackage } from './debian-packages.mjs';

ensureDebianPackage({ who: 'test-prereqs', path: '/usr/bin/chromium', pkg: 'chromium', purpose: 'for the browser tests', without: 'the browser tests will be skipped' });
ensureBubblewrap('test-prereqs');
ensureSandboxNetwork('test-prereqs');
