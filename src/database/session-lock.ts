// A session advisory lock that says its holder is alive (an agent server recorded where the gateway
// finds it; a runtime's, whose runs are its own, is held on its process's event bus connection:
// EventBus.holdLock): held on a connection of its own, so PostgreSQL frees it when the holder's
// process dies, and sweeps that find it free forget what the holder recorded.
// A database outage frees it too while the holder lives on: it is taken again on a new connection as
// soon as the database answers, and the holder puts back what a sweep may have removed meanwhile.
import pg from 'pg';
import type { Logger } from 'pino';

export type HeldLock = {
  /** Gives the lock back (ending its connection), after a retake in progress, if any, has finished. */
  release(): Promise<void>;
};

// Soon after the database is back, and no busier than a connection attempt every two seconds meanwhile.
const RETRY_DELAYS_MS = [100, 250, 500, 1000, 2000];

/**
 * Takes the session advisory lock `hashtext(key)` on a connection of its own (waiting while another
 * session holds it) and holds it until `release`. When that connection is lost, takes it again once
 * the database answers, then runs `retaken` (its failure is logged: the lock stays held). Rejects
 * when it cannot take the lock the first time.
 */
export async function holdSessionLock(
  url: string,
  key: string,
  options: { applicationName: string; logger: Pick<Logger, 'info' | 'warn'>; retaken?: () => Promise<unknown> },
): Promise<HeldLock> {
  let held: pg.Client | undefined;
  let released = false;
  let timer: NodeJS.Timeout | undefined;
  let retaking: Promise<void> | undefined;

  const take = async (): Promise<pg.Client> => {
    // Keep-alive: a connection whose peer vanished without a word (a network partition) is noticed too.
    const client = new pg.Client({ connectionString: url, application_name: options.applicationName, keepAlive: true });
    // Both fire when the connection breaks; only the held one's loss matters (a failed attempt rejects below).
    client.on('error', () => lost(client));
    client.on('end', () => lost(client));
    try {
      await client.connect();
      await client.query('SELECT pg_advisory_lock(hashtext($1))', [key]);
      return client;
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
  };

  const lost = (client: pg.Client) => {
    if (client !== held || released) return;
    held = undefined;
    void client.end().catch(() => undefined);
    options.logger.warn({ key }, 'lost the connection holding a liveness lock: taking it again once the database answers');
    retryAfter(0);
  };

  const retryAfter = (attempt: number) => {
    timer = setTimeout(() => {
      timer = undefined;
      retaking = retake(attempt).finally(() => (retaking = undefined));
    }, RETRY_DELAYS_MS[Math.min(attempt, RETRY_DELAYS_MS.length - 1)]);
  };

  const retake = async (attempt: number) => {
    let client: pg.Client;
    try {
      client = await take();
    } catch {
      if (!released) retryAfter(attempt + 1);
      return;
    }
    if (released) return void (await client.end().catch(() => undefined));
    held = client;
    options.logger.info({ key }, 'took a liveness lock again');
    await options.retaken?.().catch((error: unknown) => options.logger.warn({ err: error, key }, 'could not restore what a liveness lock stands for'));
  };

  held = await take();
  return {
    async release() {
      released = true;
      clearTimeout(timer);
      await retaking;
      const client = held;
      held = undefined;
      await client?.end().catch(() => undefined);
    },
  };
}
