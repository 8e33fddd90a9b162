// Builds the web console (console/) into console/dist with Vite: run by `postinstall`, so the
// platform serves it right after `npm install`, with no CDN and no extra step.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', 'console');
const started = performance.now();
try {
  const { build } = await import('vite');
  await build({ configFile: join(root, 'vite.config.ts') });
  console.log(`console built into console/dist in ${Math.round(performance.now() - started)} ms`);
} catch (error) {
  console.error('building the console failed:', error);
  process.exit(1);
}
