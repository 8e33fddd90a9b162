// `npm start`'s prerequisite outside npm: Debian's `bubblewrap`, the sandbox of deployed code
// (debian-packages.mjs installs it as root on a Debian-like system; elsewhere it says how).
import { ensureBubblewrap } from './debian-packages.mjs';

ensureBubblewrap('start');
