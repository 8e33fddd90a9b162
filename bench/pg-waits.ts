// What PostgreSQL's client backends are doing while a benchmark runs: pg_stat_activity sampled on a
// connection of its own every few milliseconds, each backend counted by its state and wait event
// ("running" when active and waiting on nothing: on CPU, or waiting for one). Counts of backends per
// sample, not times, so a figure means the same on a loaded machine.
import pg from 'pg';

export type WaitProfile = { samples: number; connections: number; states: { what: string; backends: number }[] };

const SAMPLE_SQL = `SELECT CASE WHEN state = 'active' THEN COALESCE(wait_event_type || ':' || wait_event, 'running') ELSE state || COALESCE(' (' || wait_event || ')', '') END AS what,
                           count(*)::int AS n
                      FROM pg_stat_activity
                     WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND datname = current_database()
                     GROUP BY 1`;

/** Starts sampling; `stop()` ends it and answers the mean number of backends in each state. */
export async function sampleWaits(databaseUrl: string, everyMs = 20): Promise<{ stop: () => Promise<WaitProfile> }> {
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'bench-wait-sampler' });
  await client.connect();
  const totals = new Map<string, number>();
  let samples = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const { rows } = await client.query<{ what: string; n: number }>(SAMPLE_SQL);
      samples++;
      for (const row of rows) totals.set(row.what, (totals.get(row.what) ?? 0) + row.n);
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      await client.end();
      const states = [...totals].map(([what, n]) => ({ what, backends: n / Math.max(1, samples) })).sort((a, b) => b.backends - a.backends);
      return { samples, connections: states.reduce((sum, s) => sum + s.backends, 0), states };
    },
  };
}

/** One line: mean backends per state, largest first (states under 0.05 backends left out). */
export function formatWaits(profile: WaitProfile): string {
  const shown = profile.states.filter((state) => state.backends >= 0.05).map((state) => `${state.what} ${state.backends.toFixed(2)}`);
  return `${profile.connections.toFixed(1)} connections (${profile.samples} samples): ${shown.join(', ')}`;
}
