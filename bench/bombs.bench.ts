// npm run bench:bombs — what small hostile bodies cost a running platform: the time each attack takes
// to be answered, how long /ok takes while it is in flight (the event loop's freedom), and the
// server's resident memory (RSS) before, at peak and a few seconds after.
//
//   BOMB_BLOCKS   one-byte zstd blocks after a huge declared window (default 20000, ~80 KB)
//   BOMB_PARALLEL gzip bodies sent at once, each inflating to BOMB_GZIP_MB (defaults 8 and 95)
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { spawnPlatform } from '../test/support/processes.js';

const BLOCKS = Number(process.env.BOMB_BLOCKS ?? 20_000);
const PARALLEL = Number(process.env.BOMB_PARALLEL ?? 8);
const GZIP_MB = Number(process.env.BOMB_GZIP_MB ?? 95);

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

function zstdHugeWindow(blocks: number): Buffer {
  const body = [0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xa7];
  for (let i = 0; i < blocks; i++) body.push(i === blocks - 1 ? 0x09 : 0x08, 0x00, 0x00, 0x7b);
  return Buffer.from(body);
}

const dataDir = mkdtempSync(join(tmpdir(), 'agent-platform-bombs-'));
const platform = await spawnPlatform(['start', '--port', '0', '--data-dir', dataDir], { DATABASE_URL: '', AGENT_PLATFORM_SECRET_KEY: '' }, 120_000);
try {
  const key = /API key: (\S+)/.exec(platform.output())![1]!;
  const pid = platform.child.pid!;
  const post = (path: string, body: Buffer, encoding: string) =>
    fetch(`${platform.url}${path}`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json', 'content-encoding': encoding },
      body: new Uint8Array(body),
    });

  async function attack(name: string, send: () => Promise<Response[]>) {
    const before = rssMb(pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 20);
    const started = performance.now();
    const inFlight = send();
    const okStarted = performance.now();
    const ok = await fetch(`${platform.url}/ok`);
    const okMs = performance.now() - okStarted;
    const responses = await inFlight;
    const ms = performance.now() - started;
    clearInterval(sampler);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const after = rssMb(pid);
    console.log(
      `| ${name} | ${[...new Set(responses.map((r) => r.status))].join(', ')} | ${ms.toFixed(0)} | ${ok.status} in ${okMs.toFixed(0)} ms | ${before.toFixed(0)} | ${peak.toFixed(0)} | ${after.toFixed(0)} |`,
    );
  }

  console.log('| attack | status | answered after (ms) | /ok while in flight | RSS before (MB) | RSS peak (MB) | RSS 3 s after (MB) |');
  console.log('|---|---|---|---|---|---|---|');
  const zstd = zstdHugeWindow(BLOCKS);
  for (const path of ['/runs/query', '/runs', '/sessions']) {
    await attack(`zstd window 0xA7 + ${BLOCKS} one-byte blocks (${zstd.length} B) → ${path}`, async () => [await post(path, zstd, 'zstd')]);
  }
  const gzip = gzipSync(Buffer.alloc(GZIP_MB * 1024 * 1024, 0x20));
  await attack(`${PARALLEL} × gzip ${(gzip.length / 1024).toFixed(0)} KB → ${GZIP_MB} MB → /runs`, () =>
    Promise.all(Array.from({ length: PARALLEL }, () => post('/runs', gzip, 'gzip'))),
  );
} finally {
  await platform.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
