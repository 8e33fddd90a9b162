// The agent server's opt-in rate limits, through the official SDK: off by default; in shadow mode
// every request is answered as without them and what would have been refused is counted (/metrics)
// and logged; in enforce mode a caller whose bucket is empty gets 429 with Retry-After, is served
// again once that has passed, and the SDK's own retries ride over it; every process of a deployment
// draws from the same buckets, kept in its database.
import { Client } from '@langchain/langgraph-sdk';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { pruneIdleBuckets } from '../../../src/agent-server/services/rate-limits/rate-limits.store.js';
import { atDeployed, removeDir, type ServeProcess, startServe } from '../../support/serve.js';

const ENFORCED = { AGENT_SERVER_RATE_LIMIT: 'enforce', AGENT_SERVER_RATE_LIMIT_CALLER_PER_MINUTE: '30', AGENT_SERVER_RATE_LIMIT_SEARCH_PER_MINUTE: '10000' };
let enforced: ServeProcess;
let shadowed: ServeProcess;
beforeAll(async () => {
  [enforced, shadowed] = await Promise.all([
    startServe({ env: ENFORCED }),
    startServe({ env: { AGENT_SERVER_RATE_LIMIT: 'shadow', AGENT_SERVER_RATE_LIMIT_CALLER_PER_MINUTE: '5', ...(atDeployed ? {} : { LOG_LEVEL: 'info' }) } }),
  ]);
}, 240_000);
afterAll(async () => {
  for (const server of [enforced, shadowed]) {
    await server?.stop();
    removeDir(server?.dir);
  }
});

/** An SDK client of `server` (its credentials at a deployed revision) that reports each failed response's Retry-After. */
function clientOf(server: ServeProcess, options: { maxRetries: number; retryAfter?: (seconds: number) => void }) {
  const { defaultHeaders } = server.client as unknown as { defaultHeaders: Record<string, string> };
  return new Client({
    apiUrl: server.url,
    defaultHeaders,
    callerOptions: {
      maxRetries: options.maxRetries,
      onFailedResponseHook: async (response?: Response) => {
        options.retryAfter?.(Number(response?.headers.get('retry-after')));
        return false;
      },
    },
  });
}

/** Searches until one is refused (at most `limit`); returns the refusal. */
async function exhaust(client: Client, limit = 300): Promise<Error & { status?: number }> {
  for (let i = 0; i < limit; i++) {
    const refused = await client.threads.search({ limit: 1 }).then(() => undefined, (error: Error) => error);
    if (refused) return refused;
  }
  throw new Error(`no request of ${limit} was refused`);
}

/** One sample's value from Prometheus text (`name{labels} value`). */
async function metric(server: ServeProcess, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`, { headers: (server.client as unknown as { defaultHeaders: Record<string, string> }).defaultHeaders })).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name}${labels} `));
  return line === undefined ? Number.NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('rate limits', () => {
  it('in shadow mode answer every request as without them, and count and log what they would have refused', async () => {
    const client = clientOf(shadowed, { maxRetries: 0 });
    const thread = await client.threads.create();
    for (let i = 0; i < 12; i++) expect((await client.threads.get(thread.thread_id)).thread_id).toBe(thread.thread_id);
    expect(await metric(shadowed, 'agent_server_rate_limit_mode', '{mode="shadow"}')).toBe(1);
    // 13 requests on a bucket of 5, refilled at one each 12 s.
    expect(await metric(shadowed, 'agent_server_rate_limit_decisions_total', '{bucket="caller",decision="limited"}')).toBeGreaterThanOrEqual(7);
    expect(await metric(shadowed, 'agent_server_rate_limit_decisions_total', '{bucket="caller",decision="allowed"}')).toBeGreaterThanOrEqual(5);
    if (!atDeployed) expect(shadowed.output()).toContain('rate limit (shadow mode): this request would have been refused');
  });

  it('in enforce mode answer 429 with Retry-After once the bucket is empty, and serve again after it', async () => {
    const waits: number[] = [];
    const client = clientOf(enforced, { maxRetries: 0, retryAfter: (seconds) => waits.push(seconds) });
    const refused = await exhaust(client);
    expect(refused).toMatchObject({ status: 429, message: expect.stringContaining('Rate limit exceeded (caller)') });
    // Refilled at 30 a minute: a token within 2 s.
    expect(waits.at(-1)).toBeGreaterThanOrEqual(1);
    expect(waits.at(-1)).toBeLessThanOrEqual(2);
    await new Promise((resolve) => setTimeout(resolve, waits.at(-1)! * 1000));
    expect(await client.threads.search({ limit: 1 })).toBeInstanceOf(Array);
    expect(await metric(enforced, 'agent_server_rate_limit_decisions_total', '{bucket="caller",decision="limited"}')).toBeGreaterThanOrEqual(1);

    // The SDK's default retries wait and try again: its caller never sees the 429.
    await exhaust(client);
    expect(await clientOf(enforced, { maxRetries: 4 }).threads.search({ limit: 1 })).toBeInstanceOf(Array);
  }, 60_000);

  it.skipIf(atDeployed)('are shared by every process of a deployment: its buckets are in its database', async () => {
    const second = await startServe({ configPath: enforced.configPath, dir: enforced.dir, env: ENFORCED });
    try {
      expect(second.deploymentId).toBe(enforced.deploymentId);
      await exhaust(clientOf(enforced, { maxRetries: 0 }));
      // The other process finds the caller's bucket as good as empty: it refuses within the few
      // tokens refilled meanwhile (one each 2 s, on a busy machine too), where a bucket of its own
      // would have taken its whole burst of 30 first.
      const other = clientOf(second, { maxRetries: 0 });
      let served = 0;
      for (; served < 30; served++) {
        const refused = await other.threads.search({ limit: 1 }).then(() => undefined, (error: Error & { status?: number }) => error);
        if (refused) {
          expect(refused.status).toBe(429);
          break;
        }
      }
      expect(served).toBeLessThan(10);
    } finally {
      await second.stop();
    }
  }, 120_000);

  it.skipIf(atDeployed)("forget a caller's bucket once it is full again, keeping its counts in /metrics", async () => {
    const client = clientOf(shadowed, { maxRetries: 0 });
    await client.threads.search({ limit: 1 });
    const counted = async () => ({
      allowed: await metric(shadowed, 'agent_server_rate_limit_decisions_total', '{bucket="caller",decision="allowed"}'),
      limited: await metric(shadowed, 'agent_server_rate_limit_decisions_total', '{bucket="caller",decision="limited"}'),
    });
    const pool = new pg.Pool({ connectionString: shadowed.databaseUrl, max: 1 });
    try {
      const buckets = async () => (await pool.query<{ key: string }>('SELECT key FROM rate_limit_buckets ORDER BY key')).rows.map((row) => row.key);
      // The caller's bucket, still refilling (5 a minute), is kept. /metrics draws on no bucket: the counts hold still.
      await pruneIdleBuckets({ pool }, 0);
      expect((await buckets()).some((key) => key.startsWith('caller:'))).toBe(true);
      const before = await counted();
      // Idle for longer than a refill takes: full again, so forgotten, its counts folded into the kind's totals.
      await pool.query("UPDATE rate_limit_buckets SET updated_at = updated_at - interval '10 minutes'");
      expect(await pruneIdleBuckets({ pool })).toBeGreaterThanOrEqual(1);
      expect((await buckets()).filter((key) => !key.startsWith('totals:'))).toEqual([]);
      expect(await counted()).toEqual(before);
    } finally {
      await pool.end();
    }
  });

  it('are off by default: nothing is counted, nothing refused', () => {
    expect(loadConfig({}, {}).agentServerRateLimits.mode).toBe('off');
  });
});
