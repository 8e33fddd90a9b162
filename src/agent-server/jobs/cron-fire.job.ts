// A tick of one cron's pg-boss schedule: fires the cron (services/crons), which creates its run.
import type { Job } from 'pg-boss';
import type { Deps } from '../../context.js';
import { CronFireJob } from '../services/crons/crons.schemas.js';
import { fireCron } from '../services/crons/crons.service.js';

export async function fireCronJob(deps: Deps, jobs: Job<unknown>[]): Promise<void> {
  for (const job of jobs) {
    const parsed = CronFireJob.safeParse(job.data);
    if (!parsed.success) {
      deps.logger.warn({ jobId: job.id }, 'cron tick without a cron id');
      continue;
    }
    const run = await fireCron(deps, parsed.data.cronId);
    if (run) deps.logger.debug({ cronId: parsed.data.cronId, runId: run.runId }, 'cron fired');
  }
}
