// `npm start`'s prerequisites outside npm: Debian's `bubblewrap`, the sandbox of deployed code, and
// `slirp4netns`, its network
// (debian-packages.mjs installs it as root on a Debian-like system; elsewhere it says how).
import { ensureBubblewrap, ensureSandboxNetwork } from './debian-packages.mjs';

ensureBubblewrap('start');
ensureSandboxNetwork('start');
