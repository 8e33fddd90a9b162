// Runs `prisma generate` without network access. Prisma's CLI first tries to download its native
// schema engine; pointing PRISMA_SCHEMA_ENGINE_BINARY at a script that fails loudly stops the download
// and makes any command that really needs the engine (migrate deploy) fail instead of silently
// succeeding. `generate` itself never runs the engine.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stub = join(root, 'node_modules', '.cache', 'agent-platform', 'no-schema-engine.sh');
if (!existsSync(stub)) {
  mkdirSync(dirname(stub), { recursive: true });
  writeFileSync(
    stub,
    '#!/bin/sh\necho "agent-platform: the Prisma schema engine is not used here; migrations are applied by `agent-platform migrate`" >&2\nexit 1\n',
  );
  chmodSync(stub, 0o755);
}
try {
  execFileSync(process.execPath, [join(root, 'node_modules', 'prisma', 'build', 'index.js'), 'generate'], {
  cwd: root,
  stdio: 'inherit',
  env: {
    ...process.env,
    // generators such as prisma-pothos-types are looked up on PATH
    PATH: `${join(root, 'node_modules', '.bin')}:${process.env.PATH ?? ''}`,
    PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? stub,
    PRISMA_HIDE_UPDATE_MESSAGE: '1',
    CHECKPOINT_DISABLE: '1',
  },
  });
} catch {
  console.error('prisma generate failed (see above)');
  process.exit(1);
}
