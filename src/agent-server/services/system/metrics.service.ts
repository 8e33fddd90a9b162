// Prometheus metrics of one deployment's agent server (GET /metrics), with prom-client. Everything is
// read from the database at scrape time, so every api process of the platform answers for every
// deployment, whichever process ran its runs:
//   agent_server_runs{status}              gauge: the deployment's runs by status (as retained)
//   agent_server_run_queue_depth           gauge: runs waiting to start (pending)
//   agent_server_run_duration_seconds      histogram: start to end of the runs that ended since this
//                                          process started (cumulative per process, as Prometheus expects)
//   agent_platform_traces_ingested_total   counter: traces ingested into the deployment's workspace, as the
//                                          platform counts them where its host can read them (a local
//                                          deployment's platform process); 0 elsewhere
//   agent_server_trace_batcher_*           the live runtime's trace batcher (asked over the runtime
//                                          channel; absent when no runtime answers or tracing is off):
//                                          _queued (gauge), _flushed_total, _backpressure_waits_total,
//                                          _failed_total (counters, trace operations since it started)
//   agent_server_rate_limit_mode{mode}     gauge: 1 for the opt-in rate limits' mode (off, shadow, enforce)
//   agent_server_rate_limit_decisions_total{bucket,decision}
//                                          counter: requests each kind of bucket let through or refused
//                                          (in shadow mode: would have refused), all processes together
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { AgentServerContext } from '../served-deployment/deployment-scope.js';
import { askRuntime } from '../served-deployment/runtime-client.js';
import type { TraceSinkStats } from '../../../contracts/trace-wire.js';
import { RUN_STATUSES } from '../runs/runs.schemas.js';
import { countRunsByStatus, runsEndedAfter } from './metrics.store.js';
import { rateLimitFigures } from '../rate-limits/rate-limits.service.js';

const DURATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
// Runs observed per scrape at most; a backlog larger than that is taken over the next scrapes.
const OBSERVE_BATCH = 10_000;

/** Each deployment's duration histogram and how far into its ended runs it has read. */
const durations = new Map<string, { histogram: Histogram; readUntil: string }>();
const processStart = new Date().toISOString();

async function durationHistogram(ctx: AgentServerContext): Promise<Histogram> {
  const { deploymentId } = ctx.deployment;
  let entry = durations.get(deploymentId);
  if (!entry) {
    entry = {
      histogram: new Histogram({ name: 'agent_server_run_duration_seconds', help: 'Run latency: start to end of each run that ended, in seconds.', buckets: DURATION_BUCKETS, registers: [] }),
      readUntil: processStart,
    };
    durations.set(deploymentId, entry);
  }
  const ended = await runsEndedAfter(ctx.db, deploymentId, entry.readUntil, OBSERVE_BATCH);
  for (const run of ended) entry.histogram.observe(Math.max(0, run.seconds));
  if (ended.length) entry.readUntil = ended[ended.length - 1]!.endedAt;
  return entry.histogram;
}

/**
 * The deployment's metrics in Prometheus text format, with its content type. `tracesIngested`: the
 * platform's count of the workspace's traces, where the agent server's host gives it.
 */
export async function deploymentMetrics(ctx: AgentServerContext, options: { tracesIngested?: () => Promise<number> } = {}): Promise<{ contentType: string; text: string }> {
  const registry = new Registry();
  const [byStatus, traces, histogram, runtime, rateLimits] = await Promise.all([
    countRunsByStatus(ctx.db, ctx.deployment.deploymentId),
    options.tracesIngested?.() ?? 0,
    durationHistogram(ctx),
    // A scrape never fails for want of a runtime: its figures are left out.
    (askRuntime(ctx, { kind: 'runtime-metrics' }) as Promise<{ traceBatcher: TraceSinkStats | null }>).catch(() => undefined),
    rateLimitFigures(ctx),
  ]);

  const runs = new Gauge({ name: 'agent_server_runs', help: "The deployment's runs by status.", labelNames: ['status'], registers: [registry] });
  for (const status of RUN_STATUSES) runs.set({ status }, byStatus.get(status) ?? 0);
  new Gauge({ name: 'agent_server_run_queue_depth', help: 'Runs waiting in the run queue (pending).', registers: [registry] }).set(byStatus.get('pending') ?? 0);
  new Counter({ name: 'agent_platform_traces_ingested_total', help: "Traces ingested into the deployment's workspace.", registers: [registry] }).inc(traces);
  registry.registerMetric(histogram);
  const batcher = runtime?.traceBatcher;
  if (batcher) {
    new Gauge({ name: 'agent_server_trace_batcher_queued', help: "Trace operations queued in the runtime's batcher, not yet stored.", registers: [registry] }).set(batcher.queued);
    new Counter({ name: 'agent_server_trace_batcher_flushed_total', help: "Trace operations the runtime's batcher wrote.", registers: [registry] }).inc(batcher.flushed);
    new Counter({ name: 'agent_server_trace_batcher_backpressure_waits_total', help: "Times a run waited for room in the runtime's full trace batcher.", registers: [registry] }).inc(batcher.backpressureWaits);
    new Counter({ name: 'agent_server_trace_batcher_writes_total', help: "Batches the runtime's trace batcher wrote (flushed ÷ writes: operations per batch).", registers: [registry] }).inc(batcher.writes ?? 0);
    new Counter({ name: 'agent_server_trace_batcher_failed_total', help: 'Trace operations that could not be stored (logged).', registers: [registry] }).inc(batcher.failed);
  }

  const mode = new Gauge({ name: 'agent_server_rate_limit_mode', help: "The opt-in rate limits' mode: 1 for the one in force.", labelNames: ['mode'], registers: [registry] });
  for (const each of ['off', 'shadow', 'enforce']) mode.set({ mode: each }, each === rateLimits.mode ? 1 : 0);
  const decisions = new Counter({ name: 'agent_server_rate_limit_decisions_total', help: 'Requests each kind of rate-limit bucket let through or refused (shadow mode: would have refused).', labelNames: ['bucket', 'decision'], registers: [registry] });
  for (const { kind, allowed, limited } of rateLimits.decisions) {
    decisions.inc({ bucket: kind, decision: 'allowed' }, allowed);
    decisions.inc({ bucket: kind, decision: 'limited' }, limited);
  }

  return { contentType: registry.contentType, text: await registry.metrics() };
}
