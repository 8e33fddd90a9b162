// A cron's timing: its expression checked with cron-parser (what pg-boss evaluates schedules with), its
// next occurrence, and the pg-boss schedule (one per cron, keyed by its id) that fires it.
import { CronExpressionParser } from 'cron-parser';
import { AppError } from '../../../errors.js';
import type { Boss } from '../../../queues.js';

/** The queue every cron's pg-boss schedule sends its tick to (declared in agent-server/jobs/boss.ts). */
export const CRON_FIRE_QUEUE = 'crons.fire';

/** pg-boss's clock ticks once a minute: a schedule may not ask for more. */
const MIN_INTERVAL_MS = 60_000;

const invalid = (field: string, msg: string) => new AppError('VALIDATION_FAILED', `body.${field}: ${msg}`, [{ loc: ['body', field], msg, type: 'value_error' }]);

/** VALIDATION_FAILED unless `schedule` is a cron expression that fires, at most once a minute, in a known time zone. */
export function assertSchedule(schedule: string, timezone: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    throw invalid('timezone', `Unknown time zone "${timezone}".`);
  }
  let occurrences: Date[];
  try {
    const expression = CronExpressionParser.parse(schedule, { tz: timezone, strict: false });
    occurrences = [expression.next().toDate(), expression.next().toDate()];
  } catch (error) {
    throw invalid('schedule', `Invalid cron expression "${schedule}": ${error instanceof Error ? error.message : String(error)}`);
  }
  if (occurrences[1]!.getTime() - occurrences[0]!.getTime() < MIN_INTERVAL_MS) {
    throw invalid('schedule', `Schedule "${schedule}" fires more than once a minute; crons fire at most once a minute.`);
  }
}

/** The first occurrence after `after`, or null when there is none before `endTime`. */
export function nextOccurrence(schedule: string, timezone: string, after: Date, endTime: Date | null): Date | null {
  try {
    const next = CronExpressionParser.parse(schedule, { tz: timezone, strict: false, currentDate: after }).next().toDate();
    return endTime && next >= endTime ? null : next;
  } catch {
    return null;
  }
}

/** Makes the cron's pg-boss schedule match it: present while it may still fire, absent otherwise. */
export async function syncSchedule(boss: Boss | undefined, cron: { cronId: string; schedule: string; timezone: string; enabled: boolean; nextRunDate: Date | null }): Promise<void> {
  if (!boss) throw new AppError('UNAVAILABLE', 'Crons need the job queue, which this process has not started.');
  if (cron.enabled && cron.nextRunDate) {
    await boss.schedule(CRON_FIRE_QUEUE, cron.schedule, { cronId: cron.cronId }, { tz: cron.timezone, key: cron.cronId });
  } else {
    await boss.unschedule(CRON_FIRE_QUEUE, cron.cronId);
  }
}
